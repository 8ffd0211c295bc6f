import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { ContainerProbes, HookAction } from '../../container-probes.ts';
import {
  initialProbeState,
  type ProbeKind,
  type ProbeWorkerState,
  probeKindName,
  recordProbe,
  shouldProbe,
} from '../../probe-worker.ts';
import { LABELS, PLAN_ENV } from '../names.ts';
import type { PodPlan } from '../pod-plan.ts';
import { runHookAction, runProbeAction } from './agent-actions.ts';
import type { AgentEngine, EngineContainerInfo, EngineContainerSummary } from './agent-engine.ts';
import {
  type HookReport,
  type InstanceReport,
  type ProberReport,
  REPORT_VERSION,
  type ReportedEvent,
} from './prober-report.ts';

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
/** The report is rewritten at least this often, so the provider can tell a prober that stopped. */
const HEARTBEAT_MS = 3_000;
/** Events older than this, or beyond this many, leave the report. */
const EVENT_TTL_MS = 10 * 60_000;
const MAX_EVENTS = 300;
/** The kubelet's minimumGracePeriodInSeconds: a container always gets this long to stop. */
const MINIMUM_GRACE_SECONDS = 2;

/** The part of a pod's plan the prober reads. */
type AgentPlan = Pick<PodPlan, 'namespace' | 'name' | 'uid' | 'restartPolicy' | 'gracePeriodSeconds'> & {
  containers: Array<{ name: string; probes?: ContainerProbes }>;
};

interface Worker {
  kind: ProbeKind;
  state: ProbeWorkerState;
  nextAt: number;
  busy: boolean;
}

interface Tracked {
  id: string;
  uid: string;
  container: string;
  startedAt: number;
  running: boolean;
  probes: ContainerProbes;
  workers: Worker[];
  report: InstanceReport;
  /** A kill or a deletion's stop is under way. */
  stopping: boolean;
}

interface PodState {
  plan: AgentPlan;
  podIp?: string;
  deletingUntil?: number;
}

export class ProberAgent {
  readonly #boot = randomUUID();
  readonly #now: () => number;
  readonly #tracked = new Map<string, Tracked>();
  readonly #pods = new Map<string, PodState>();
  /** Inspections by container id, kept while the listed state is the same. */
  readonly #inspected = new Map<string, { state: string; info: EngineContainerInfo }>();
  /** What the last report said of instances not seen again yet (after a restart of the prober). */
  #restored: Record<string, InstanceReport> = {};
  #events: ReportedEvent[] = [];
  #seq = 0;
  #dirty = true;
  #writtenAt = 0;
  #refreshing: Promise<void> | undefined;
  #refreshAgain = false;
  #stopped = false;
  readonly #timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: AgentOptions) {
    this.#now = options.now ?? Date.now;
  }

  /** Starts the loops; resolves once the first look at the engine is done. */
  async start(): Promise<void> {
    this.#restore();
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
      this.#dirty = true;
    }
    for (const id of this.#inspected.keys()) if (!listed.some((c) => c.Id === id)) this.#inspected.delete(id);
    for (const uid of this.#pods.keys()) if (!byUid.has(uid)) this.#pods.delete(uid);
    this.#restored = Object.fromEntries(Object.entries(this.#restored).filter(([id]) => seen.has(id)));
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
      if (pod.deletingUntil !== undefined) this.#onDeleting(existing, pod);
      return;
    }
    const info = await this.#inspect(summary);
    const startedAt = Date.parse(info?.State.StartedAt ?? '') || this.#now();
    if (existing) {
      existing.running = running;
      if (!running) existing.workers = [];
      this.#dirty = true;
      return;
    }
    const restored = this.#restored[summary.Id];
    delete this.#restored[summary.Id];
    const report: InstanceReport = restored ?? { uid, container: name, probes: {} };
    // A hook the previous prober process was running when it stopped is not run twice.
    for (const hook of ['postStart', 'preStop'] as const) {
      const r = report[hook];
      if (r?.state === 'running') report[hook] = { state: 'done', at: r.at };
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
    this.#dirty = true;
    if (running && probes.postStart && !report.postStart && pod.deletingUntil === undefined)
      void this.#postStart(tracked, probes.postStart, pod);
    if (pod.deletingUntil !== undefined) this.#onDeleting(tracked, pod);
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
      if (step.changed) this.#dirty = true;
      if (step.kill) {
        const restart = pod.plan.restartPolicy !== 'Never' ? ', will be restarted' : '';
        void this.#kill(
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

  async #postStart(tracked: Tracked, action: HookAction, pod: PodState): Promise<void> {
    tracked.report.postStart = { state: 'running', at: this.#now() };
    this.#dirty = true;
    this.#writeReport(true);
    const failure = await this.#hook(tracked, action, pod, Number.POSITIVE_INFINITY);
    tracked.report.postStart = { state: failure ? 'failed' : 'done', at: this.#now() };
    this.#dirty = true;
    this.#writeReport(true);
    if (!failure) return;
    this.#event(tracked, 'Warning', 'FailedPostStartHook', failure);
    await this.#kill(tracked, pod, 'postStart', 'FailedPostStartHook');
  }

  /**
   * killContainer: the Killing event, the preStop hook within the grace
   * period, then a stop whose SIGKILL follows after what is left of it
   * (2 s at least).
   */
  async #kill(tracked: Tracked, pod: PodState, reason: string, message: string): Promise<void> {
    if (tracked.stopping) return;
    tracked.stopping = true;
    tracked.report.killed = { reason, at: this.#now() };
    this.#dirty = true;
    this.#event(tracked, 'Normal', 'Killing', message);
    this.#writeReport(true);
    let grace = pod.plan.gracePeriodSeconds;
    const preStop = tracked.probes.preStop;
    if (preStop && grace > 0 && !tracked.report.preStop) {
      const started = this.#now();
      await this.#preStop(tracked, preStop, pod, grace * 1000);
      grace -= Math.floor((this.#now() - started) / 1000);
    }
    try {
      await this.options.engine.stop(tracked.id, Math.max(grace, MINIMUM_GRACE_SECONDS));
    } catch (err) {
      this.#log({ msg: 'could not stop a container', container: tracked.id, err: String(err) });
    }
    void this.refresh();
  }

  /** The pod is being deleted: its preStop hooks, each followed by SIGTERM, before the deadline. */
  #onDeleting(tracked: Tracked, pod: PodState): void {
    if (!tracked.running || tracked.stopping || pod.deletingUntil === undefined) return;
    const preStop = tracked.probes.preStop;
    if (!preStop || tracked.report.preStop) return;
    tracked.stopping = true;
    const left = pod.deletingUntil - this.#now();
    void (async () => {
      if (left > 0) await this.#preStop(tracked, preStop, pod, left);
      try {
        await this.options.engine.kill(tracked.id, 'SIGTERM');
      } catch (err) {
        this.#log({ msg: 'could not signal a container', container: tracked.id, err: String(err) });
      }
    })();
  }

  async #preStop(tracked: Tracked, action: HookAction, pod: PodState, withinMs: number): Promise<void> {
    tracked.report.preStop = { state: 'running', at: this.#now() };
    this.#dirty = true;
    this.#writeReport(true);
    const failure = await this.#hook(tracked, action, pod, withinMs);
    tracked.report.preStop = { state: failure ? 'failed' : 'done', at: this.#now() } satisfies HookReport;
    this.#dirty = true;
    if (failure) this.#event(tracked, 'Warning', 'FailedPreStopHook', failure);
    this.#writeReport(true);
  }

  /** Runs a hook; resolves with the failure's message, or undefined. A hook that outlasts `withinMs` is left running. */
  #hook(tracked: Tracked, action: HookAction, pod: PodState, withinMs: number): Promise<string | undefined> {
    const run = runHookAction(
      action,
      {
        engine: this.options.engine,
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

  #event(tracked: Tracked, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const pod = this.#pods.get(tracked.uid);
    if (!pod) return;
    const now = this.#now();
    const same = this.#events.findIndex(
      (e) =>
        e.uid === tracked.uid &&
        e.container === tracked.container &&
        e.reason === reason &&
        e.message === message,
    );
    if (same >= 0) this.#events.splice(same, 1);
    this.#events.push({
      seq: ++this.#seq,
      at: now,
      namespace: pod.plan.namespace,
      name: pod.plan.name,
      uid: tracked.uid,
      node: this.options.node,
      container: tracked.container,
      type,
      reason,
      message: message.slice(0, 1024),
    });
    this.#events = this.#events.filter((e) => now - e.at < EVENT_TTL_MS).slice(-MAX_EVENTS);
    this.#dirty = true;
  }

  /** Writes the report when something changed (`force`: at once), else once a heartbeat. */
  #writeReport(force: boolean): void {
    const now = this.#now();
    if (!force && !this.#dirty && now - this.#writtenAt < HEARTBEAT_MS) return;
    const instances: Record<string, InstanceReport> = { ...this.#restored };
    for (const tracked of this.#tracked.values()) instances[tracked.id] = tracked.report;
    const report: ProberReport = {
      version: REPORT_VERSION,
      boot: this.#boot,
      script: this.options.script,
      writtenAt: now,
      instances,
      events: this.#events,
    };
    try {
      const path = this.options.reportPath;
      mkdirSync(path.slice(0, path.lastIndexOf('/')) || '/', { recursive: true });
      writeFileSync(`${path}.tmp`, JSON.stringify(report));
      renameSync(`${path}.tmp`, path);
      this.#dirty = false;
      this.#writtenAt = now;
    } catch (err) {
      this.#log({ msg: 'could not write the report', err: String(err) });
    }
  }

  /** What the previous prober process reported: hooks already run, probe results, not yet forgotten events. */
  #restore(): void {
    try {
      const report = JSON.parse(readFileSync(this.options.reportPath, 'utf8')) as ProberReport;
      if (report.version !== REPORT_VERSION) return;
      this.#restored = report.instances ?? {};
    } catch {
      // No report yet (a new prober), or an unreadable one: start afresh.
    }
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
