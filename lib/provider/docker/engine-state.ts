import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import { doublingDelayMs } from '../../util/doubling-delay.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import { dependentContainerIds, isEngineNotFound, storagelessContainerId } from './engine-errors.ts';
import { isRole, LABELS, labelFilter } from './names.ts';
import type { InfraInstance, Instance, ObservedPod } from './observed-pod.ts';
import { planFromEnv } from './pod-plan-codec.ts';

/**
 * Reads pods from the engine: one list call (by label) for any number of
 * pods, then an inspection of each container whose state the list shows
 * changed since this process last inspected it. An instance is never
 * restarted in place (a restart is a new instance), so what an inspection
 * says of a container stays true for as long as the list shows the same
 * state: polling a node with a hundred stable pods costs one request.
 */
/** Inspections in flight at once (a cold process inspects every container of a node once). */
const INSPECT_PARALLEL = 16;
/**
 * Lists tried while containers keep vanishing under it (a burst of removals
 * on a loaded host can take seconds), with a pause doubling from 50 ms to 1 s:
 * about 3.5 s in all.
 */
const LIST_ATTEMPTS = 8;
const LIST_RETRY_MS = 50;
const LIST_RETRY_MAX_MS = 1_000;
/** From this attempt on, a container record without storage that fails the list is removed (see {@link EngineState.containers}). */
const REPAIR_FROM_ATTEMPT = 4;
/**
 * Rounds of a second look at containers the list shows but an inspection
 * does not find, with a pause doubling from 20 ms to 500 ms: about 1 s in all.
 * Docker Engine lists a container it is creating (state "created") before an
 * inspection finds it; one removed meanwhile leaves the list.
 */
const UNSEEN_ATTEMPTS = 6;
const UNSEEN_RETRY_MS = 20;
const UNSEEN_RETRY_MAX_MS = 500;

export class EngineState {
  private readonly inspected = new Map<string, { state: string; info: Docker.ContainerInspectInfo }>();

  constructor(
    private readonly docker: Docker,
    /** The network the infra containers join, where the pod IP is read. */
    private readonly network: string,
    private readonly clock: Pick<Clock, 'sleep'>,
    /** Where the removal of a storageless record is reported; without it (a reader only), none is removed. */
    private readonly repairLog?: Pick<Logger, 'warn'>,
  ) {}

  /**
   * Every pod whose containers carry all of `labels`, keyed by uid. `listed`: the caller's own list of
   * those containers, when it just made one (a status round reads the node's prober from it too).
   */
  async pods(
    labels: Record<string, string>,
    signal?: AbortSignal,
    listed?: Docker.ContainerInfo[],
  ): Promise<Map<string, ObservedPod>> {
    listed ??= await this.containers(labels, signal);
    const pods = new Map<string, ObservedPod>();
    // A container Podman is removing is gone: no instance may be created to join it, nothing started in it.
    const ours = listed.filter(
      (c) => c.Labels?.[LABELS.uid] && isRole(c.Labels?.[LABELS.role]) && c.State !== 'removing',
    );
    for (const summary of ours) {
      const l = summary.Labels;
      const uid = l[LABELS.uid] ?? '';
      const pod = pods.get(uid) ?? {
        uid,
        namespace: l[LABELS.namespace] ?? '',
        name: l[LABELS.name] ?? '',
        node: l[LABELS.node] ?? '',
        instances: [],
      };
      pods.set(uid, pod);
      if (l[LABELS.role] === 'deleting') {
        const deadline = Date.parse(l[LABELS.deadline] ?? '');
        pod.deleting = { deadline: Number.isFinite(deadline) ? deadline : 0 };
      }
    }
    const add = (summary: Docker.ContainerInfo, info: Docker.ContainerInspectInfo) => {
      const role = summary.Labels[LABELS.role];
      const pod = pods.get(summary.Labels[LABELS.uid] ?? '');
      if (!pod || !isRole(role)) return;
      const instance = toInstance(summary, info, role);
      if (role === 'infra') pod.infra = { ...instance, ...infraDetails(info, this.network), role: 'infra' };
      else pod.instances.push(instance);
    };
    let unseen = await this.inspectAll(
      ours.filter((c) => c.Labels[LABELS.role] !== 'deleting'),
      add,
      signal,
    );
    // Listed, yet not found: being created (Docker Engine), or removed since the list. Look again until the
    // list drops it or an inspection finds it; taken for absent, a pod whose infra container is being created
    // would look like the remains of a deletion, and be removed.
    for (let attempt = 1; unseen.length > 0 && attempt <= UNSEEN_ATTEMPTS; attempt++) {
      await this.clock.sleep(doublingDelayMs(attempt, UNSEEN_RETRY_MS, UNSEEN_RETRY_MAX_MS), signal);
      const relisted = new Map(
        (await this.containers(labels, signal)).filter((c) => c.State !== 'removing').map((c) => [c.Id, c]),
      );
      const still = unseen.flatMap((c) => {
        const now = relisted.get(c.Id);
        return now ? [now] : [];
      });
      unseen = await this.inspectAll(still, add, signal);
    }
    for (const summary of unseen) {
      const pod = pods.get(summary.Labels[LABELS.uid] ?? '');
      if (pod) pod.unsettled = true;
    }
    return pods;
  }

  /** Inspects `summaries`, hands each one found to `add`, and resolves with those the engine did not find. */
  private async inspectAll(
    summaries: Docker.ContainerInfo[],
    add: (summary: Docker.ContainerInfo, info: Docker.ContainerInspectInfo) => void,
    signal?: AbortSignal,
  ): Promise<Docker.ContainerInfo[]> {
    const inspected = await mapSettledLimit(summaries, INSPECT_PARALLEL, async (summary) => ({
      summary,
      info: await this.inspect(summary, signal),
    }));
    const unseen: Docker.ContainerInfo[] = [];
    for (const result of inspected) {
      if (result.status === 'rejected') throw result.reason;
      const { summary, info } = result.value;
      if (info) add(summary, info);
      else unseen.push(summary);
    }
    return unseen;
  }

  /**
   * The containers carrying `labels`. Podman fails a whole list when one of
   * its containers is removed meanwhile ("container not known", "no such
   * container"): list again, after a pause, so that a burst of removals on
   * the engine has moved on.
   *
   * A record Podman keeps after its container's storage is gone (a create
   * that raced a removal on Podman 4) fails every list for good, for every
   * client of the engine. Once it still does after a second of retries, it is
   * removed by the id the engine names: that container can never run again,
   * and nothing else is touched.
   */
  async containers(labels: Record<string, string>, signal?: AbortSignal): Promise<Docker.ContainerInfo[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.docker.listContainers({
          all: true,
          filters: { label: labelFilter(labels) },
          ...(signal ? { abortSignal: signal } : {}),
        });
      } catch (err) {
        if (attempt >= LIST_ATTEMPTS || !isEngineNotFound(err)) throw err;
        const storageless = storagelessContainerId(err);
        if (storageless && this.repairLog && attempt >= REPAIR_FROM_ATTEMPT)
          await this.removeStorageless(storageless, this.repairLog, signal);
      }
      await this.clock.sleep(doublingDelayMs(attempt, LIST_RETRY_MS, LIST_RETRY_MAX_MS), signal);
    }
  }

  /**
   * Removes a storageless record, and first what joined it: a removal of an
   * infra container that lost its storage and then stopped on a container
   * created meanwhile in its namespace leaves exactly that.
   */
  private async removeStorageless(
    id: string,
    log: Pick<Logger, 'warn'>,
    signal?: AbortSignal,
  ): Promise<void> {
    log.warn({ container: id }, 'docker provider: removing a container record whose storage is gone');
    const remove = async (target: string) => {
      this.invalidate(target);
      await this.docker
        .getContainer(target)
        .remove({ force: true, ...(signal ? { abortSignal: signal } : {}) });
    };
    try {
      await remove(id);
    } catch (err) {
      const dependents = dependentContainerIds(err);
      if (dependents.length === 0) {
        if (isEngineNotFound(err)) return;
        throw err;
      }
      for (const dependent of dependents) {
        await remove(dependent).catch((e: unknown) => {
          if (!isEngineNotFound(e)) throw e;
        });
      }
      await remove(id).catch((e: unknown) => {
        if (!isEngineNotFound(e)) throw e;
      });
    }
  }

  /** Forgets what was inspected of a container this process just acted on. */
  invalidate(id: string): void {
    this.inspected.delete(id);
  }

  private async inspect(
    summary: Docker.ContainerInfo,
    signal?: AbortSignal,
  ): Promise<Docker.ContainerInspectInfo | undefined> {
    const cached = this.inspected.get(summary.Id);
    if (cached && cached.state === summary.State) return cached.info;
    try {
      const info = await this.docker
        .getContainer(summary.Id)
        .inspect({ ...(signal ? { abortSignal: signal } : {}) });
      this.inspected.set(summary.Id, { state: summary.State, info });
      // Bounded: entries of removed containers would otherwise accumulate in a long-lived process.
      if (this.inspected.size > 10_000) {
        const oldest = this.inspected.keys().next().value;
        if (oldest !== undefined) this.inspected.delete(oldest);
      }
      return info;
    } catch (err) {
      // Removed between the list and the inspection, or not yet registered by a create under way (Docker Engine).
      if (isEngineNotFound(err)) return undefined;
      throw err;
    }
  }
}

function toInstance(
  summary: Docker.ContainerInfo,
  info: Docker.ContainerInspectInfo,
  role: Instance['role'],
): Instance {
  const labels = summary.Labels ?? {};
  const s = info.State;
  const createdAt = Date.parse(info.Created) || summary.Created * 1000;
  const startedAt = engineTime(s.StartedAt);
  const finishedAt = engineTime(s.FinishedAt);
  const attempt = Number(labels[LABELS.attempt] ?? 0);
  const base = {
    id: summary.Id,
    role,
    ...(labels[LABELS.container] ? { container: labels[LABELS.container] } : {}),
    attempt: Number.isInteger(attempt) ? attempt : 0,
    createdAt,
    ...(info.Image ? { imageId: info.Image } : {}),
  };
  if (s.Running || s.Paused || s.Restarting)
    return { ...base, state: 'running', ...(startedAt ? { startedAt } : {}) };
  // A container the engine failed to start: it never ran, and never will.
  if (s.Error) {
    return {
      ...base,
      state: 'exited',
      exitCode: s.ExitCode || 128,
      finishedAt: finishedAt ?? createdAt,
      startError: s.Error,
    };
  }
  if (startedAt === undefined) return { ...base, state: 'created' };
  return {
    ...base,
    state: 'exited',
    startedAt,
    finishedAt: finishedAt ?? startedAt,
    exitCode: s.ExitCode,
    ...(s.OOMKilled ? { oomKilled: true } : {}),
  };
}

function infraDetails(
  info: Docker.ContainerInspectInfo,
  network: string,
): Pick<InfraInstance, 'plan' | 'ip'> {
  const plan = planFromEnv(info.Config?.Env);
  const networks = info.NetworkSettings?.Networks ?? {};
  const ip = networks[network]?.IPAddress || Object.values(networks).find((n) => n.IPAddress)?.IPAddress;
  return { ...(plan ? { plan } : {}), ...(info.State.Running && ip ? { ip } : {}) };
}

/** Engine times are RFC 3339 with nanoseconds; a zero time (`0001-01-01...`) means never. */
function engineTime(text: string | undefined): number | undefined {
  if (!text || text.startsWith('0001-')) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}
