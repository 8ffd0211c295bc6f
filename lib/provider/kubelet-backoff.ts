import { doublingDelayMs } from '../util/doubling-delay.ts';

/**
 * The kubelet's restart back-off (pkg/kubelet/kubelet.go: backOffPeriod 10 s,
 * MaxContainerBackOff 300 s; client-go's flowcontrol.Backoff doubles from the
 * initial period to the maximum and forgets an entry left alone for twice the
 * maximum), for providers that restart containers themselves.
 */
export const BACKOFF_INITIAL_MS = 10_000;
export const BACKOFF_MAX_MS = 300_000;

/**
 * How long to wait, after the instance numbered `attempt` (0 for the first)
 * exited, before starting the next one. The kubelet restarts a container's
 * first exit at once and backs off from the second: 10 s, 20 s, 40 s... up to
 * 5 min. An instance that ran for twice the maximum or longer starts the count
 * over, as the kubelet forgets the back-off of a container that stayed up.
 *
 * A pure function of the provider's own state (the instance number, how long
 * it ran), so every invocation that looks at the pod computes the same wait.
 */
export function restartDelayMs(attempt: number, ranMs: number): number {
  if (attempt <= 0 || ranMs >= 2 * BACKOFF_MAX_MS) return 0;
  return doublingDelayMs(attempt, BACKOFF_INITIAL_MS, BACKOFF_MAX_MS);
}

/** The wait before pulling an image again after `failures` failed pulls in a row (at least one): the same back-off. */
export function pullDelayMs(failures: number): number {
  return Math.min(BACKOFF_INITIAL_MS * 2 ** Math.max(0, failures - 1), BACKOFF_MAX_MS);
}

/** The kubelet's ShouldContainerBeRestarted for an exited container (exit code undefined: it never ran). */
export function restartsAfterExit(policy: string, exitCode: number | undefined): boolean {
  if (policy === 'Always') return true;
  if (policy === 'OnFailure') return exitCode !== 0;
  return false;
}
