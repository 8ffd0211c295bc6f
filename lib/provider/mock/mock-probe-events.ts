import type { V1Pod } from '@kubernetes/client-node';
import { probeKindName } from '../probe-worker.ts';
import type { ProviderEventRecorder } from '../provider.ts';
import type { MockContainerView } from './mock-container-status.ts';
import { containersAt, type MockPodState } from './mock-pod-status.ts';
import type { MockTermination } from './mock-timeline.ts';

/** Event keys remembered, at most: the oldest are forgotten first (they may be recorded again, the same Event). */
const MAX_REMEMBERED = 50_000;

/**
 * The Events the kubelet records for probes and hooks, for the mock's
 * simulated ones: Unhealthy for a probe that failed, Killing and the
 * failure before it for a container killed by liveness, startup or a failed
 * postStart hook. Each is recorded once per process when a status read
 * finds it happened (a process that starts again records the ones it sees
 * again, which updates the same Event objects).
 */
export class MockProbeEvents {
  readonly #recorded = new Set<string>();

  constructor(private readonly events: ProviderEventRecorder | undefined) {}

  async record(state: MockPodState, pod: V1Pod | undefined, now: number): Promise<void> {
    if (!this.events || !pod || !state.containers.some((c) => c.probes)) return;
    const { apps } = containersAt(state, Math.max(now, state.createdAt));
    for (const view of apps) {
      const at = view.at;
      if (!at) continue;
      const ended = at.state.kind === 'terminated' ? at.state.termination : undefined;
      for (const [run, termination] of [
        [at.restartCount - 1, at.last],
        [at.restartCount, ended],
      ] as const) {
        if (termination?.killed) await this.killed(pod, view, run, termination, state.restartPolicy);
      }
      const current = at.state.kind === 'running' ? at.state.probes : undefined;
      const failure = current?.failures.readiness;
      if (failure && failure.first <= now)
        await this.once(
          pod,
          `${view.name}/${at.restartCount}/readiness`,
          'Warning',
          'Unhealthy',
          failed(view, 'readiness'),
        );
    }
  }

  private async killed(
    pod: V1Pod,
    view: MockContainerView,
    run: number,
    termination: MockTermination,
    restartPolicy: string,
  ): Promise<void> {
    const reason = termination.killed;
    if (!reason) return;
    const key = `${view.name}/${run}/killed`;
    if (reason === 'postStart') {
      const message = `postStart hook of container ${view.name} failed (mock annotation hook.${view.name}.post-start: fail)`;
      await this.once(pod, `${key}/hook`, 'Warning', 'FailedPostStartHook', message);
      await this.once(pod, key, 'Normal', 'Killing', 'FailedPostStartHook');
      return;
    }
    const restart = restartPolicy !== 'Never' ? ', will be restarted' : '';
    await this.once(pod, `${key}/${reason}`, 'Warning', 'Unhealthy', failed(view, reason));
    await this.once(pod, key, 'Normal', 'Killing', `Container ${view.name} failed ${reason} probe${restart}`);
  }

  private async once(
    pod: V1Pod,
    key: string,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<void> {
    const full = `${pod.metadata?.uid}/${key}`;
    if (this.#recorded.has(full)) return;
    this.#recorded.add(full);
    if (this.#recorded.size > MAX_REMEMBERED)
      this.#recorded.delete(this.#recorded.values().next().value ?? '');
    await this.events?.record(pod, type, reason, message);
  }
}

function failed(view: MockContainerView, kind: 'readiness' | 'liveness' | 'startup'): string {
  return `${probeKindName(kind)} probe failed: the mock's probe answered failure (annotation probe.${view.name}.${kind})`;
}
