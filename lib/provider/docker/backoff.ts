/**
 * The kubelet's back-offs (pkg/kubelet/kubelet.go: backOffPeriod 10 s,
 * MaxContainerBackOff 300 s; client-go's flowcontrol.Backoff doubles from the
 * initial period to the maximum and forgets an entry left alone for twice
 * the maximum).
 */
export const BACKOFF_INITIAL_MS = 10_000;
export const BACKOFF_MAX_MS = 300_000;

/**
 * How long to wait, after the instance numbered `attempt` exited, before
 * starting the next one. The kubelet restarts a container's first exit at
 * once and backs off from the second: 10 s, 20 s, 40 s... up to 5 min. An
 * instance that ran for longer than twice the maximum starts the count over,
 * as the kubelet forgets the back-off of a container that stayed up.
 *
 * Derived from the engine's state alone (the instance number and its start
 * and finish), so every invocation that polls the pod computes the same wait.
 */
export function restartDelayMs(attempt: number, ranMs: number): number {
  if (attempt <= 0 || ranMs >= 2 * BACKOFF_MAX_MS) return 0;
  return Math.min(BACKOFF_INITIAL_MS * 2 ** (attempt - 1), BACKOFF_MAX_MS);
}

/** The wait before pulling an image again after `failures` failed pulls in a row (at least one). */
export function pullDelayMs(failures: number): number {
  return Math.min(BACKOFF_INITIAL_MS * 2 ** Math.max(0, failures - 1), BACKOFF_MAX_MS);
}
