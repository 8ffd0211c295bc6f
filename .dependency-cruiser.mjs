/**
 * The direction of the imports, checked by `npm run lint`. Each rule names
 * what it keeps true; test/unit/function-imports.test.ts and
 * module-paths.test.ts check what a rule here cannot say (a function's
 * run-time imports of @kubernetes/client-node, which must skip type-only and
 * dynamic imports along the whole chain; the README's table of call paths).
 *
 * Type-only imports count everywhere, circles included: esbuild erases
 * them, so they cost nothing at run time, but a circle of types is still two
 * modules that can be neither read nor moved apart, which is what a circle
 * costs a reader.
 */

/** Everything that is not our own source under lib/ or functions/. */
const OUTSIDE_LIB = '^(functions|scripts|bench|test|infra|examples)/';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module reaches itself through its imports, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'functions-import-lib-only',
      comment:
        'A function is a handler over one lib/ entry point: it imports lib/ (and npm packages), never another function, a script, a test or a bench.',
      severity: 'error',
      from: { path: '^functions/' },
      to: { path: OUTSIDE_LIB },
    },
    {
      name: 'lib-never-imports-functions',
      comment:
        'lib/ never imports functions/, scripts/, test/ or bench/. lib/local is the local stand-in for Lambda: it runs the real handlers (deployment-handlers.ts, local-kubelet-api.ts) as Lambda does, and no function reaches it (no-function-reaches-local).',
      severity: 'error',
      from: { path: '^lib/', pathNot: '^lib/local/' },
      to: { path: OUTSIDE_LIB },
    },
    {
      name: 'lib-local-imports-only-handlers',
      comment: 'Of functions/, scripts/, test/ and bench/, lib/local imports only the handlers it hosts.',
      severity: 'error',
      from: { path: '^lib/local/' },
      to: { path: OUTSIDE_LIB, pathNot: '^functions/' },
    },
    {
      name: 'no-function-reaches-local',
      comment:
        'lib/local (control plane, Podman, the local Lambda runtime, DynamoDB Local) is for tests and `npm start`: no function bundle may contain any of it.',
      severity: 'error',
      from: { path: '^functions/' },
      to: { path: '^lib/local/', reachable: true },
    },
    {
      name: 'provider-never-imports-the-application',
      comment:
        'A provider implements lib/provider/provider.ts for whoever uses it: it never imports the application that uses it (composition, pod, node, reconcile, tick, handlers, the kubelet API, the status report) nor the local deployment.',
      severity: 'error',
      from: { path: '^lib/provider/' },
      to: {
        path: '^lib/(app|pod|node|node-config|reconcile|tick|handler|kubelet-api|status-report|release|local)/',
      },
    },
    {
      name: 'provider-settings-stay-light',
      comment:
        "A provider's settings.ts is loaded by every function at cold start (loadConfig): zod, the config's parsing helpers and the provider's own light parsers only, never its heavy code or an npm package besides zod.",
      severity: 'error',
      from: { path: '^lib/provider/[^/]+/settings\\.ts$' },
      to: {
        pathNot: [
          '^node_modules/zod/',
          '^lib/config/env-parsing\\.ts$',
          '^lib/util/zod-mini\\.ts$',
          '^lib/provider/ecs/override-allowlist\\.ts$',
        ],
      },
    },
    {
      name: 'entry-is-a-door',
      comment:
        'An entry point (lib/**/*-entry.ts) is what a function calls; nothing in lib/ imports one. What two entries share lives in the module that owns it (composition in lib/app/dependencies.ts, lock names in lib/lock/lock-names.ts).',
      severity: 'error',
      from: { path: '^lib/' },
      to: { path: '^lib/.+-entry\\.ts$', pathNot: '^lib/local/' },
    },
    {
      name: 'only-lib-kube-builds-kubernetes-clients',
      comment:
        "Only lib/kube imports @kubernetes/client-node's values (and lib/local, which no function reaches, for its YAML and patch helpers); elsewhere its model types only, with `import type`.",
      severity: 'error',
      from: { path: '^(lib|functions)/', pathNot: '^lib/(kube|local)/' },
      to: { path: '^node_modules/@kubernetes/client-node/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-dynamodb-adapter-imports-the-dynamodb-sdk',
      comment: 'The DynamoDB SDK is imported by lib/state (the table adapter and its wire) alone.',
      severity: 'error',
      from: { path: '^(lib|functions)/', pathNot: '^lib/state/' },
      to: { path: '^node_modules/@aws-sdk/(client-dynamodb|lib-dynamodb)/' },
    },
    {
      name: 'only-the-eventbridge-adapter-imports-the-eventbridge-sdk',
      comment:
        "The EventBridge SDK's values are imported by lib/events/eventbridge-publisher.ts alone (the local bus reads its types).",
      severity: 'error',
      from: { path: '^(lib|functions)/', pathNot: '^lib/events/eventbridge-publisher\\.ts$' },
      to: { path: '^node_modules/@aws-sdk/client-eventbridge/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-dev-dependency-in-a-function',
      comment:
        'What a function bundle contains is a dependency, never a devDependency (its types excepted: esbuild erases them).',
      severity: 'error',
      from: { path: '^(lib|functions)/', pathNot: '^lib/local/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-undeclared-package',
      comment: 'Every npm package imported is declared in package.json.',
      severity: 'error',
      from: {},
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'no-unresolvable-import',
      comment:
        "Every import resolves to a file (but the adapter bench/kube-client.ts's esbuild plugin resolves for each build: virtual-modules.d.ts).",
      severity: 'error',
      from: {},
      to: { couldNotResolve: true, pathNot: '^svk-bench-adapter$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are dependencies too (see the top of this file).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
