/** The adapter bench/kube-client.ts builds each workload bundle with (ours.ts or client-node.ts). */
declare module 'svk-bench-adapter' {
  export function open(kubeconfigPath: string): Promise<import('./adapter.ts').BenchClient>;
}
