import type { ContainerProbes } from '../../container-probes.ts';
import { initialProbeState, probeKindName, recordProbe, shouldProbe } from '../../probe-worker.ts';
import { LABELS, PLAN_ENV } from '../names.ts';
import { runProbeAction } from './agent-actions.ts';
import type { AgentEngine, EngineContainerInfo, EngineContainerSummary } from './agent-engine.ts';
import { AgentHooks } from './agent-hooks.ts';
import { AgentReport } from './agent-report.ts';
import type { AgentPlan, PodState, Tracked, Worker } from './agent-types.ts';
import type { InstanceReport } from './prober-report.ts';

/**
 * The prober: the part of the Docker provider that runs on the engine host,
 * in one container per virtual node (prober-container.ts), because probes
 * and hooks must run between the functions' ticks and where the pods'
 * addresses are. It does what the kubelet's prober manager, its probe
 * workers and its hook runner do (pkg/kubelet/prober, pkg/kubelet/lifecycle,
 * kuberuntime's startContainer and killContainer), for the pods of its node
 * as the engine holds them (each pod's plan in its infra container):
 *
 * - one worker per probe of each running app instance, every periodSeconds
 *   (probe-worker.ts: initial delay, thresholds, startup holding the other
 *   two); a liveness or startup failure kills the instance (its preStop
 *   hook first, then a stop with the pod's grace period), and the provider
 *   restarts it under the pod's restartPolicy with the kubelet's back-off;
 * - postStart right after an instance starts (the provider reports it
 *   waiting until the hook returned; a failure kills it);
 * - preStop when its pod is being deleted (the deletion marker), then
 *   SIGTERM, within the grace period; the provider kills what still runs
 *   when it ends.
 *
 * What it found is in its report (prober-report.ts), which the provider
 * reads once per status round; the Events the kubelet would record
 * (Unhealthy, ProbeWarning, Killing, FailedPostStartHook, FailedPreStopHook)
 * travel in it too, and the provider records them.
 */

export interface AgentOptions {
  engine: AgentEngine;
  node: string;
  /** The engine network of the pods: where their IPs are read. */
  network: string;
  /** A hash of the script this prober runs, written into its report. */
  script: string;
  reportPath: string;
  now?: () => number;
  log?: (line: Record<string, unknown>) => void;
}

/** How often the engine is listed when no event wakes the prober sooner. */
const REFRESH_MS = 2_000;
/** How often due workers are looked for. */
const TICK_MS = 100;

export class ProberAgent {
  readonly #now: () => number;
  readonly #tracked = new Map<string, Tracked>();
  readonly #pods = new Map<string, PodState>();
  /** Inspections by container id, kept while the listed state is the same. */
  readonly #inspected = new Map<string, { state: string; info: EngineContainerInfo }>();
  readonly #report: AgentReport;
  readonly #hooks: AgentHooks;
  #refreshing: Promise<void> | undefined;
  #refreshAgain = false;
  #stopped = false;
  readonly #timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: AgentOptions) {
    this.#now = options.now ?? Date.now;
    this.#report = new AgentReport(options.reportPath, options.script, this.#now, (line) => this.#log(line));
    this.#hooks = new AgentHooks({
      engine: options.engine,
      now: this.#now,
      event: (tracked, type, reason, message) => this.#event(tracked, type, reason, message),
      written: () => {
        this.#report.changed();
        this.#writeReport(true);
      },
      refresh: () => void this.refresh(),
      log: (line) => this.#log(line),
    });
  }

  /** Starts the loops; resolves once the first look at the engine is done. */
  async start(): Promise<void> {
    this.#report.restore();
    await this.refresh();
    this.#timers.push(setInterval(() => void this.refresh(), REFRESH_MS));
    this.#timers.push(setInterval(() => this.#tick(), TICK_MS));
    void this.#watchEvents();
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
  }

  /** Reads the node's containers and brings the workers in line with them; concurrent calls run once more. */
  refresh(): Promise<void> {
    if (this.#refreshing) {
      this.#refreshAgain = true;
      return this.#refreshing;
    }
    this.#refreshing = (async () => {
      do {
        this.#refreshAgain = false;
        try {
          await this.#refreshOnce();
        } catch (err) {
          this.#log({ msg: 'could not read the engine', err: String(err) });
        }
      } while (this.#refreshAgain && !this.#stopped);
      this.#refreshing = undefined;
    })();
    return this.#refreshing;
  }

  async #refreshOnce(): Promise<void> {
    const { engine, node } = this.options;
    const listed = await engine.listContainers({ [LABELS.node]: node });
    const byUid = new Map<string, EngineContainerSummary[]>();
    for (const c of listed) {
      const uid = c.Labels?.[LABELS.uid];
      if (uid) byUid.set(uid, [...(byUid.get(uid) ?? []), c]);
    }
    const seen = new Set<string>();
    for (const [uid, containers] of byUid) {
      const pod = await this.#podState(uid, containers);
      if (!pod) continue;
      for (const c of containers) {
        if (c.Labels?.[LABELS.role] !== 'app') continue;
        const name = c.Labels?.[LABELS.container] ?? '';
        const probes = pod.plan.containers.find((p) => p.name === name)?.probes;
        if (!probes || Object.keys(probes).length === 0) continue;
        seen.add(c.Id);
        await this.#track(c, uid, name, probes, pod);
      }
    }
    for (const id of this.#tracked.keys()) {
      if (seen.has(id)) continue;
      this.#tracked.delete(id);
      this.#report.changed();
    }
    for (const id of this.#inspected.keys()) if (!listed.some((c) => c.Id === id)) this.#inspected.delete(id);
    for (const uid of this.#pods.keys()) if (!byUid.has(uid)) this.#pods.delete(uid);
    this.#report.keepRestored(seen);
    this.#writeReport(false);
  }

  async #podState(uid: string, containers: EngineContainerSummary[]): Promise<PodState | undefined> {
    const infra = containers.find((c) => c.Labels?.[LABELS.role] === 'infra');
    if (!infra) return undefined;
    const info = await this.#inspect(infra);
    const plan = info && planOf(info);
    if (!plan) return undefined;
    const marker = containers.find((c) => c.Labels?.[LABELS.role] === 'deleting');
    const deadline = marker ? Date.parse(marker.Labels?.[LABELS.deadline] ?? '') : Number.NaN;
    const networks = info.NetworkSettings?.Networks ?? {};
    const podIp =
      networks[this.options.network]?.IPAddress ||
      Object.values(networks).find((n) => n.IPAddress)?.IPAddress ||
      undefined;
    const pod: PodState = {
      plan,
      ...(podIp ? { podIp } : {}),
      ...(marker ? { deletingUntil: Number.isFinite(deadline) ? deadline : this.#now() } : {}),
    };
    this.#pods.set(uid, pod);
    return pod;
  }

  async #track(
    summary: EngineContainerSummary,
    uid: string,
    name: string,
    probes: ContainerProbes,
    pod: PodState,
  ): Promise<void> {
    const existing = this.#tracked.get(summary.Id);
    const running = summary.State === 'running';
    if (existing && existing.running === running) {
      if (pod.deletingUntil !== undefined) this.#hooks.onDeleting(existing, pod);
      return;
    }
    const info = await this.#inspect(summary);
    const startedAt = Date.parse(info?.State.StartedAt ?? '') || this.#now();
    if (existing) {
      existing.running = running;
      if (!running) existing.workers = [];
      this.#report.changed();
      return;
    }
    const restored = this.#report.takeRestored(summary.Id);
    const report: InstanceReport = restored ?? { uid, container: name, probes: {} };
    // A hook the previous prober process was running when it stopped is not run twice.
    for (const hook of ['postStart', 'preStop'] as const) {
      const r = report[hook];
      if (r?.state === 'running') report[hook] = { ...r, state: 'done' };
    }
    const tracked: Tracked = {
      id: summary.Id,
      uid,
      container: name,
      startedAt,
      running,
      probes,
      workers: [],
      report,
      stopping: report.killed !== undefined,
    };
    if (running) tracked.workers = this.#workers(probes, report, startedAt);
    this.#tracked.set(summary.Id, tracked);
    this.#report.changed();
    if (running && probes.postStart && !report.postStart && pod.deletingUntil === undefined)
      void this.#hooks.postStart(tracked, probes.postStart, pod);
    if (pod.deletingUntil !== undefined) this.#hooks.onDeleting(tracked, pod);
  }

  /** A worker per probe, its first probe at a random point of its first period (as the kubelet's worker sleeps). */
  #workers(probes: ContainerProbes, report: InstanceReport, startedAt: number): Worker[] {
    const now = this.#now();
    return (['startup', 'liveness', 'readiness'] as const).flatMap((kind) => {
      const spec = probes[kind];
      if (!spec) return [];
      const restored = report.probes[kind];
      const state = restored
        ? { ...initialProbeState(kind, restored.since), result: restored.result }
        : initialProbeState(kind, Math.max(startedAt, 0));
      report.probes[kind] = { result: state.result, since: state.since };
      return [{ kind, state, nextAt: now + Math.random() * spec.periodSeconds * 1000, busy: false }];
    });
  }

  #tick(): void {
    const now = this.#now();
    for (const tracked of this.#tracked.values()) {
      if (!tracked.running || tracked.stopping) continue;
      const pod = this.#pods.get(tracked.uid);
      if (!pod || pod.deletingUntil !== undefined) continue;
      // A container with a postStart hook that has not returned is not Running yet: nothing probes it.
      if (tracked.probes.postStart && tracked.report.postStart?.state !== 'done') continue;
      for (const worker of tracked.workers) {
        if (worker.busy || now < worker.nextAt) continue;
        const spec = tracked.probes[worker.kind];
        if (!spec) continue;
        while (worker.nextAt <= now) worker.nextAt += spec.periodSeconds * 1000;
        void this.#probe(tracked, worker, pod);
      }
    }
    this.#writeReport(false);
  }

  async #probe(tracked: Tracked, worker: Worker, pod: PodState): Promise<void> {
    const spec = tracked.probes[worker.kind];
    if (!spec) return;
    const startup = tracked.workers.find((w) => w.kind === 'startup');
    const container = {
      running: tracked.running,
      startedAt: tracked.startedAt,
      started: !startup || startup.state.result === 'success',
    };
    if (!shouldProbe(worker.kind, worker.state, spec, container, this.#now())) return;
    worker.busy = true;
    try {
      // The kubelet tries a probe that errored (could not be set up) up to 3 times.
      let outcome = await this.#runProbe(tracked, spec, pod);
      for (let retry = 1; retry < 3 && outcome.kind === 'error'; retry++)
        outcome = await this.#runProbe(tracked, spec, pod);
      if (!this.#tracked.has(tracked.id) || !tracked.running || tracked.stopping) return;
      const name = probeKindName(worker.kind);
      if (outcome.kind === 'error')
        this.#event(tracked, 'Warning', 'Unhealthy', `${name} probe errored: ${outcome.message}`);
      else if (outcome.kind === 'failure')
        this.#event(tracked, 'Warning', 'Unhealthy', `${name} probe failed: ${outcome.output}`);
      else if (outcome.kind === 'warning')
        this.#event(tracked, 'Warning', 'ProbeWarning', `${name} probe warning: ${outcome.output}`);
      const passed = outcome.kind === 'success' || outcome.kind === 'warning';
      const step = recordProbe(worker.kind, worker.state, spec, passed ? 'success' : 'failure', this.#now());
      worker.state = step.state;
      tracked.report.probes[worker.kind] = { result: step.state.result, since: step.state.since };
      if (step.changed) this.#report.changed();
      if (step.kill) {
        const restart = pod.plan.restartPolicy !== 'Never' ? ', will be restarted' : '';
        void this.#hooks.kill(
          tracked,
          pod,
          worker.kind,
          `Container ${tracked.container} failed ${worker.kind} probe${restart}`,
        );
      }
    } finally {
      worker.busy = false;
    }
  }

  #runProbe(tracked: Tracked, spec: NonNullable<ContainerProbes['readiness']>, pod: PodState) {
    return runProbeAction(
      spec.action,
      { engine: this.options.engine, containerId: tracked.id, ...(pod.podIp ? { podIp: pod.podIp } : {}) },
      spec.timeoutSeconds * 1000,
    );
  }

  #event(tracked: Tracked, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const pod = this.#pods.get(tracked.uid);
    if (!pod) return;
    const { namespace, name } = pod.plan;
    const subject = {
      namespace,
      name,
      uid: tracked.uid,
      node: this.options.node,
      container: tracked.container,
    };
    this.#report.event(subject, type, reason, message);
  }

  #writeReport(force: boolean): void {
    this.#report.write(
      [...this.#tracked.values()].map((t): [string, InstanceReport] => [t.id, t.report]),
      force,
    );
  }

  async #watchEvents(): Promise<void> {
    for (let pause = 500; !this.#stopped; pause = Math.min(pause * 2, 30_000)) {
      try {
        await this.options.engine.events({ [LABELS.node]: this.options.node }, () => {
          pause = 500;
          void this.refresh();
        });
      } catch (err) {
        this.#log({ msg: 'engine event stream failed', err: String(err) });
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  async #inspect(summary: EngineContainerSummary): Promise<EngineContainerInfo | undefined> {
    const cached = this.#inspected.get(summary.Id);
    if (cached && cached.state === summary.State) return cached.info;
    try {
      const info = await this.options.engine.inspect(summary.Id);
      this.#inspected.set(summary.Id, { state: summary.State, info });
      return info;
    } catch {
      return undefined;
    }
  }

  #log(line: Record<string, unknown>): void {
    this.options.log?.({ time: new Date(this.#now()).toISOString(), ...line });
  }
}

/** The pod plan in an infra container's environment, as far as the prober reads it. */
function planOf(info: EngineContainerInfo): AgentPlan | undefined {
  const entry = info.Config?.Env?.find((e) => e.startsWith(`${PLAN_ENV}=`));
  if (!entry) return undefined;
  try {
    const plan = JSON.parse(entry.slice(PLAN_ENV.length + 1)) as AgentPlan;
    return typeof plan.uid === 'string' && Array.isArray(plan.containers) ? plan : undefined;
  } catch {
    return undefined;
  }
}
