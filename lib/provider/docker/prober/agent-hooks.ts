import type { HookAction } from '../../container-probes.ts';
import { runHookAction } from './agent-actions.ts';
import type { AgentEngine } from './agent-engine.ts';
import type { PodState, Tracked } from './agent-types.ts';
import type { HookReport } from './prober-report.ts';

/** The kubelet's minimumGracePeriodInSeconds: a container always gets this long to stop. */
const MINIMUM_GRACE_SECONDS = 2;

/** What the hooks need of the prober. */
export interface HookContext {
  engine: AgentEngine;
  now(): number;
  event(tracked: Tracked, type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** Something in an instance's report changed: it is written at once. */
  written(): void;
  /** Look at the engine again (a container was stopped). */
  refresh(): void;
  log(line: Record<string, unknown>): void;
}

/**
 * The kubelet's hook runner and container killer (kuberuntime's
 * startContainer and killContainer) for the prober: postStart after a
 * start, a kill after a failed liveness or startup probe or postStart hook
 * (preStop first), and a deleted pod's preStop followed by SIGTERM.
 */
export class AgentHooks {
  constructor(private readonly ctx: HookContext) {}

  async postStart(tracked: Tracked, action: HookAction, pod: PodState): Promise<void> {
    const startedAt = this.ctx.now();
    tracked.report.postStart = { state: 'running', startedAt, at: startedAt };
    this.ctx.written();
    const failure = await this.#hook(tracked, action, pod, Number.POSITIVE_INFINITY);
    tracked.report.postStart = { state: failure ? 'failed' : 'done', startedAt, at: this.ctx.now() };
    this.ctx.written();
    if (!failure) return;
    this.ctx.event(tracked, 'Warning', 'FailedPostStartHook', failure);
    await this.kill(tracked, pod, 'postStart', 'FailedPostStartHook');
  }

  /**
   * killContainer: the Killing event, the preStop hook within the grace
   * period, then a stop whose SIGKILL follows after what is left of it
   * (2 s at least).
   */
  async kill(tracked: Tracked, pod: PodState, reason: string, message: string): Promise<void> {
    if (tracked.stopping) return;
    tracked.stopping = true;
    tracked.report.killed = { reason, at: this.ctx.now() };
    this.ctx.event(tracked, 'Normal', 'Killing', message);
    this.ctx.written();
    let grace = pod.plan.gracePeriodSeconds;
    const preStop = tracked.probes.preStop;
    if (preStop && grace > 0 && !tracked.report.preStop) {
      const started = this.ctx.now();
      await this.#preStop(tracked, preStop, pod, grace * 1000);
      grace -= Math.floor((this.ctx.now() - started) / 1000);
    }
    try {
      await this.ctx.engine.stop(tracked.id, Math.max(grace, MINIMUM_GRACE_SECONDS));
    } catch (err) {
      this.ctx.log({ msg: 'could not stop a container', container: tracked.id, err: String(err) });
    }
    this.ctx.refresh();
  }

  /** The pod is being deleted: its preStop hooks, each followed by SIGTERM, before the deadline. */
  onDeleting(tracked: Tracked, pod: PodState): void {
    if (!tracked.running || tracked.stopping || pod.deletingUntil === undefined) return;
    const preStop = tracked.probes.preStop;
    if (!preStop || tracked.report.preStop) return;
    tracked.stopping = true;
    const left = pod.deletingUntil - this.ctx.now();
    void (async () => {
      if (left > 0) await this.#preStop(tracked, preStop, pod, left);
      try {
        await this.ctx.engine.kill(tracked.id, 'SIGTERM');
      } catch (err) {
        this.ctx.log({ msg: 'could not signal a container', container: tracked.id, err: String(err) });
      }
    })();
  }

  async #preStop(tracked: Tracked, action: HookAction, pod: PodState, withinMs: number): Promise<void> {
    const startedAt = this.ctx.now();
    tracked.report.preStop = { state: 'running', startedAt, at: startedAt };
    this.ctx.written();
    const failure = await this.#hook(tracked, action, pod, withinMs);
    tracked.report.preStop = {
      state: failure ? 'failed' : 'done',
      startedAt,
      at: this.ctx.now(),
    } satisfies HookReport;
    if (failure) this.ctx.event(tracked, 'Warning', 'FailedPreStopHook', failure);
    this.ctx.written();
  }

  /** Runs a hook; resolves with the failure's message, or undefined. A hook that outlasts `withinMs` is left running. */
  #hook(tracked: Tracked, action: HookAction, pod: PodState, withinMs: number): Promise<string | undefined> {
    const run = runHookAction(
      action,
      {
        engine: this.ctx.engine,
        containerId: tracked.id,
        container: tracked.container,
        pod: `${pod.plan.name}_${pod.plan.namespace}(${pod.plan.uid})`,
        ...(pod.podIp ? { podIp: pod.podIp } : {}),
      },
      Number.isFinite(withinMs) ? Math.max(1, withinMs) : 2_147_483_647,
    );
    if (!Number.isFinite(withinMs)) return run;
    return Promise.race([
      run,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), withinMs)),
    ]);
  }
}
