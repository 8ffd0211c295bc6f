/**
 * client-node's KubeConfig alone, for kubeconfig.ts to import dynamically:
 * a dynamic `import('@kubernetes/client-node')` would keep every export of
 * the package in the bundle (esbuild cannot tell which ones a namespace
 * import uses), a 3 MiB chunk; through this module only KubeConfig and what
 * it needs are bundled. Never imported statically by a function
 * (test/unit/function-imports.test.ts).
 */
export { KubeConfig } from '@kubernetes/client-node';
