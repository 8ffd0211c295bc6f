import type Docker from 'dockerode';
import type { Clock } from '../../../clock.ts';
import type { Logger } from '../../../log/logger.ts';
import type { ProviderEventRecorder } from '../../provider.ts';
import { isEngineNotFound } from '../engine-errors.ts';
import { LABELS } from '../names.ts';
import type { ObservedPod } from '../observed-pod.ts';
import type { PodPlan } from '../pod-plan.ts';
import {
  ensureProber,
  type ProberSettings,
  type ProberSummary,
  proberName,
  proberOf,
  readProberReport,
  removeProber,
  STALE_REPORT_MS,
} from './prober-container.ts';
import type { ProberReport, ReportedEvent } from './prober-report.ts';

/**
 * The provider's side of the node probers: keeps each node's prober
 * container as its pods need it, reads its report once per status round,
 * and records the Events it reports (each once per process: a process
 * that starts cold records the last minute's again, which updates the same
 * Event objects, see KubePodEventRecorder).
 */

/** How far back a process that has not read a prober's report before records its events. */
const EVENT_CATCH_UP_MS = 60_000;

export interface NodeProbersOptions {
  docker: Docker;
  clock: Clock;
  log: Logger;
  settings: ProberSettings;
  /** Pulls an image when the engine lacks it (the infra image's puller). */
  pullImage: (image: string, signal?: AbortSignal) => Promise<void>;
  events?: ProviderEventRecorder;
}

/** Whether a pod's containers have probes or hooks, which only a prober runs. */
export function needsProber(plan: PodPlan | undefined): boolean {
  return (plan?.containers ?? []).some((c) => c.probes !== undefined);
}

export class NodeProbers {
  /** The last event recorded, per node and prober boot. */
  readonly #recorded = new Map<string, { boot: string; seq: number }>();

  constructor(private readonly options: NodeProbersOptions) {}

  /**
   * A status round's part: the node's prober kept as its pods need it
   * (`listed` is the round's container list of the node, which shows the
   * prober), its report read, its new events recorded. Resolves with the
   * report, or undefined when no pod needs one or none can be read yet.
   */
  async round(
    node: string,
    pods: Iterable<ObservedPod>,
    listed: readonly Docker.ContainerInfo[],
    signal?: AbortSignal,
  ): Promise<ProberReport | undefined> {
    const current = proberOf(listed);
    const needed = [...pods].some((p) => needsProber(p.infra?.plan));
    if (!needed) {
      if (current) await removeProber(this.options.docker, current.id, node);
      return undefined;
    }
    await this.#ensure(node, current, signal);
    const report = await readProberReport(this.options.docker, node, signal);
    if (
      report &&
      this.options.clock.now() - report.writtenAt > STALE_REPORT_MS &&
      current?.state === 'running'
    ) {
      // Running, yet not writing: a prober that hangs is replaced, as an exited one is started.
      this.options.log.warn({ node }, 'docker provider: the prober stopped reporting; replacing it');
      await removeProber(this.options.docker, current.id);
      await this.#ensure(node, undefined, signal);
    }
    if (report) await this.#recordEvents(node, report);
    return report;
  }

  /** For a pod just created with probes or hooks: its node's prober runs. */
  async ensure(node: string, signal?: AbortSignal): Promise<void> {
    await this.#ensure(node, await this.#summary(node), signal);
  }

  /** The node's report, without keeping the prober (a single pod's read). */
  report(node: string, signal?: AbortSignal): Promise<ProberReport | undefined> {
    return readProberReport(this.options.docker, node, signal);
  }

  /** Whether the node's prober runs now (it runs a deleted pod's preStop hooks). */
  async running(node: string): Promise<boolean> {
    return (await this.#summary(node))?.state === 'running';
  }

  async #summary(node: string): Promise<ProberSummary | undefined> {
    const { docker } = this.options;
    try {
      const info = await docker.getContainer(proberName(node)).inspect();
      const script = info.Config?.Labels?.[LABELS.proberScript];
      return {
        id: info.Id,
        state: info.State.Running ? 'running' : info.State.Status,
        ...(script ? { script } : {}),
      };
    } catch (err) {
      if (isEngineNotFound(err)) return undefined;
      throw err;
    }
  }

  async #ensure(node: string, current: ProberSummary | undefined, signal?: AbortSignal): Promise<void> {
    const { docker, settings, log, pullImage, clock } = this.options;
    const outcome = await ensureProber(docker, node, settings, current, {
      pullImage: (image) => pullImage(image, signal),
      sleep: (ms) => clock.sleep(ms, signal),
    });
    if (outcome !== 'running') log.info({ node, outcome }, `docker provider: node prober ${outcome}`);
  }

  async #recordEvents(node: string, report: ProberReport): Promise<void> {
    const { events, clock } = this.options;
    if (!events) return;
    const last = this.#recorded.get(node);
    const since = clock.now() - EVENT_CATCH_UP_MS;
    const fresh = report.events.filter((e) =>
      last?.boot === report.boot ? e.seq > last.seq : e.at >= since,
    );
    const newest = report.events.at(-1);
    if (newest) this.#recorded.set(node, { boot: report.boot, seq: newest.seq });
    for (const event of fresh) await events.record(eventPod(event), event.type, event.reason, event.message);
  }
}

function eventPod(event: ReportedEvent) {
  return {
    metadata: { namespace: event.namespace, name: event.name, uid: event.uid },
    spec: { nodeName: event.node, containers: [] },
  };
}
