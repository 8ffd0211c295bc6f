import type { V1Pod } from '@kubernetes/client-node';
import { doublingDelayMs } from '../../util/doubling-delay.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import {
  type AppliedPodStatus,
  type ContainerLogOptions,
  type PodProvider,
  type PodUsage,
  type ProviderChange,
  ProviderNotFoundError,
  ProviderUnsupportedError,
} from '../provider.ts';
import { deletingConfig, infraConfig, volumeConfig } from './container-config.ts';
import { containerLogs } from './container-logs.ts';
import type { DockerPodProviderOptions } from './docker-pod-options.ts';
import { DockerContainerStreams } from './docker-streams.ts';
import { prepareEmptyDirs } from './empty-dirs.ts';
import { engineChanges } from './engine-changes.ts';
import {
  isEngineNotFound,
  isNameConflict,
  isNotModified,
  isNotRunning,
  isStartUnderWay,
} from './engine-errors.ts';
import { engineKindOnce } from './engine-kind.ts';
import { engineSelinuxOnce } from './engine-selinux.ts';
import { EngineState } from './engine-state.ts';
import { ImagePuller } from './image-puller.ts';
import { describe, infraName, LABELS, podIdentity } from './names.ts';
import type { Instance, ObservedPod } from './observed-pod.ts';
import { type AdvanceDeps, advancePod, markedForDeletion, reportPod } from './pod-advance.ts';
import { type PodPlan, podPlan } from './pod-plan.ts';
import { removePod } from './pod-removal.ts';
import { type CpuSamples, podStats } from './pod-stats.ts';
import { unsupportedFields } from './pod-support.ts';
import { NodeProbers, needsProber } from './prober/node-probers.ts';
import type { ProberReport } from './prober/prober-report.ts';
import { removalOf } from './removals-in-flight.ts';
import { TerminationMessages } from './termination-message.ts';
import { VolumeDelivery, type VolumeSources } from './volume-delivery.ts';

export type { DockerPodProviderOptions };

/**
 * Starts of the infra container tried while a concurrent create holds its
 * name and the engine cannot find it yet, or while a concurrent start of it
 * runs, with a pause doubling from 20 ms to 1 s: about 4 s in all, for a
 * create that Podman on a loaded host takes a while to record. The start
 * after a concurrent one finished is answered 304 (already running).
 */
const INFRA_ATTEMPTS = 10;
/** The port-forward relay image unless configured: busybox, which has `nc`. */
export const DEFAULT_RELAY_IMAGE = 'docker.io/library/busybox:1.36';
const INFRA_RETRY_MS = 20;
/** Without an API server, no ConfigMap or Secret exists. */
const NO_VOLUME_SOURCES: VolumeSources = { configMap: async () => undefined, secret: async () => undefined };
const INFRA_RETRY_MAX_MS = 1_000;

/**
 * The pod part of the Docker provider: each pod is an infra container
 * holding its network namespace, its init and app containers joined to it,
 * and its emptyDir volumes, all named after the pod uid and labelled with
 * its identity and node (names.ts). Everything it knows lives on the engine
 * (the plan in the infra container, the deletion deadline in a marker), so
 * any invocation, any time after any restart of ours, picks up where the
 * last one stopped.
 *
 * No call waits for anything long: createPod creates and starts what it can
 * and returns; pulls run in the background; getPod and listPods move pods
 * on (pod-progress.ts); deletePod sends SIGTERM and the polls that follow
 * remove the pod once its containers exited or its grace period ended.
 */
export class DockerPodProvider implements PodProvider {
  private readonly state: EngineState;
  private readonly deps: AdvanceDeps;
  private readonly cpu: CpuSamples = new Map();
  private readonly probers: NodeProbers;
  readonly streams: DockerContainerStreams;

  constructor(private readonly options: DockerPodProviderOptions) {
    const { docker, clock, log, settings } = options;
    this.state = new EngineState(docker, settings.network, clock, log);
    const puller = new ImagePuller({ docker, clock, log, timeoutMs: settings.pullTimeoutMs });
    const engineKind = engineKindOnce(docker);
    this.deps = {
      docker,
      state: this.state,
      puller,
      settings,
      engineKind,
      engineSelinux: engineSelinuxOnce(docker),
      clock,
      log,
      registryAuth: options.registryAuth ?? (async () => undefined),
      messages: new TerminationMessages(docker, engineKind),
      mountpoints: new Map(),
      volumes: new VolumeDelivery({
        docker,
        clock,
        log,
        sources: options.volumeSources ?? NO_VOLUME_SOURCES,
        swapImage: settings.relayImage ?? DEFAULT_RELAY_IMAGE,
        pullImage: async (image, signal) => {
          await puller.ensure(image, signal);
        },
        ...(options.events ? { events: options.events } : {}),
      }),
    };
    this.probers = new NodeProbers({
      docker,
      clock,
      log,
      settings,
      pullImage: (image, signal) => puller.ensure(image, signal),
      ...(options.events ? { events: options.events } : {}),
    });
    this.streams = new DockerContainerStreams({
      docker,
      state: this.state,
      puller,
      relayImage: settings.relayImage ?? DEFAULT_RELAY_IMAGE,
      log,
    });
  }

  /**
   * Creates the pod's volumes and infra container, starts what can start now
   * and resolves with its status. Idempotent by uid; another uid under the
   * same name is removed first. A uid that is being deleted (its deletion
   * marker on the engine) is not created again: it resolves with no status,
   * or the status of its graceful stop.
   * @throws ProviderUnsupportedError naming every field it cannot honour; nothing is created then.
   */
  async createPod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const identity = podIdentity(pod);
    const { clusterDomain } = this.options.settings;
    const downward = this.downwardOptions();
    const reasons = unsupportedFields(pod, clusterDomain, downward);
    if (reasons.length > 0) throw new ProviderUnsupportedError(reasons, 'docker');
    const plan = podPlan(pod, identity, clusterDomain, downward);
    const byName = await this.state.pods(
      { [LABELS.namespace]: plan.namespace, [LABELS.name]: plan.name },
      signal,
    );
    for (const [uid, other] of byName) {
      if (uid !== plan.uid)
        await removePod(this.deps, other, other.infra?.plan?.volumes.map((v) => v.name) ?? [], signal);
    }
    const current = byName.get(plan.uid);
    // A uid being deleted never comes back (a create that read its pod before the delete, retried late).
    if (current?.deleting || removalOf(plan.uid))
      return current ? (await advancePod(this.deps, current, signal))?.status : undefined;
    if (!current?.infra) {
      await this.createInfra(plan, signal);
      await prepareEmptyDirs(this.options, plan, signal);
    }
    if (needsProber(plan)) await this.probers.ensure(plan.node, signal);
    const observed = (await this.state.pods({ [LABELS.uid]: plan.uid }, signal)).get(plan.uid);
    if (!observed) throw new Error(`docker provider: pod ${describe(plan)} vanished while it was created`);
    return (await advancePod(this.deps, observed, signal, await this.reportFor([observed], signal)))?.status;
  }

  /**
   * Reports the pod after a metadata change. The engine cannot change a
   * container's image in place.
   * @throws ProviderNotFoundError when this uid does not run.
   * @throws ProviderUnsupportedError when a container's image changed.
   */
  async updatePod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const identity = podIdentity(pod);
    const observed = (await this.state.pods({ [LABELS.uid]: identity.uid }, signal)).get(identity.uid);
    if (!observed?.infra?.plan)
      throw new ProviderNotFoundError(`docker provider has no pod ${describe(identity)}`);
    const was = observed.infra.plan;
    const changed = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].filter((c) => {
      const before = [...was.initContainers, ...was.containers].find((p) => p.name === c.name);
      return before && before.image !== c.image;
    });
    if (changed.length > 0) {
      throw new ProviderUnsupportedError(
        changed.map(
          (c) =>
            `spec.containers[${c.name}].image: changing an image of a running pod is not supported (delete and recreate it)`,
        ),
        'docker',
      );
    }
    // Labels and annotations shown by downwardAPI volumes reach the files now, not at the next minute.
    if (observed.infra.state === 'running' && !observed.deleting)
      await this.deps.volumes.refresh(was, observed.infra.id, pod, signal).catch((err: unknown) => {
        this.options.log.warn({ err, uid: identity.uid }, 'docker provider: updating volumes failed');
      });
    return (await advancePod(this.deps, observed, signal, await this.reportFor([observed], signal)))?.status;
  }

  /**
   * Stops and removes the pod. Within its grace period (deletionTimestamp in
   * the future and deletionGracePeriodSeconds above 0, as on the API object
   * of a graceful delete), sends SIGTERM and records the deadline on the
   * engine; the polls that follow remove the pod once its containers exited,
   * or kill it at the deadline. Otherwise kills and removes it at once.
   * @throws ProviderNotFoundError when no object of this uid is on the engine.
   */
  async deletePod(pod: V1Pod, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid;
    if (!uid) throw new ProviderNotFoundError('docker provider: a pod without a uid is never ours');
    const observed = (await this.state.pods({ [LABELS.uid]: uid }, signal)).get(uid);
    if (!observed) throw new ProviderNotFoundError(`docker provider has no pod with uid ${uid}`);
    const deadline = Date.parse(String(pod.metadata?.deletionTimestamp ?? ''));
    // A graceful delete comes from the API object (deletionTimestamp and its grace period). A pod without a
    // grace period, such as our own report of it (getPod) once its API object is gone, is killed at once:
    // a force delete after a graceful one ends the pod then, not at the first delete's deadline.
    const graceful =
      (pod.metadata?.deletionGracePeriodSeconds ?? 0) > 0 && deadline > this.options.clock.now();
    const running = observed.instances.filter((i) => i.state === 'running');
    const volumes = observed.infra?.plan?.volumes.map((v) => v.name) ?? [];
    if (!graceful || running.length === 0) {
      await removePod(this.deps, observed, volumes, signal);
      return;
    }
    if (!observed.deleting) await this.markDeleting(observed, new Date(deadline), signal);
    // A container with a preStop hook is the prober's to stop: the hook, then SIGTERM (prober-agent.ts).
    const plan = observed.infra?.plan;
    const hooked = running.filter(
      (i) => i.role === 'app' && plan?.containers.find((c) => c.name === i.container)?.probes?.preStop,
    );
    const byProber = hooked.length > 0 && (await this.probers.running(observed.node));
    if (hooked.length > 0 && !byProber) await this.preStopNotRun(pod, hooked);
    const signalled = byProber ? running.filter((i) => !hooked.includes(i)) : running;
    await Promise.all(signalled.map((i) => this.signal(i.id, 'SIGTERM', signal)));
  }

  /** A delete while the node's prober is not running: the containers get SIGTERM at once, with an Event saying why. */
  private async preStopNotRun(pod: V1Pod, hooked: readonly Instance[]): Promise<void> {
    for (const instance of hooked) {
      await this.options.events?.record(
        pod,
        'Warning',
        'FailedPreStopHook',
        `preStop hook of container ${instance.container} not run: the node's prober is not running`,
      );
    }
  }

  async getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod | undefined> {
    const pods = await this.state.pods({ [LABELS.namespace]: namespace, [LABELS.name]: name }, signal);
    // Several uids under one name only while a replacement is under way: the newest is the pod.
    const newestFirst = [...pods.values()].sort(
      (a, b) => (b.infra?.createdAt ?? 0) - (a.infra?.createdAt ?? 0),
    );
    const report = await this.reportFor(newestFirst, signal);
    let found: V1Pod | undefined;
    for (const observed of newestFirst) {
      const advanced = await advancePod(this.deps, observed, signal, report);
      found ??= advanced;
    }
    return found;
  }

  async listPods(nodeName: string, signal?: AbortSignal): Promise<V1Pod[]> {
    const labels = { [LABELS.node]: nodeName };
    const containers = await this.state.containers(labels, signal);
    const pods = await this.state.pods(labels, signal, containers);
    const report = await this.probers
      .round(nodeName, pods.values(), containers, signal)
      .catch((err: unknown) => {
        // Without the report, probed containers read as not ready; everything else moves on.
        if (!signal?.aborted)
          this.options.log.warn({ err, node: nodeName }, 'docker provider: node prober failed');
        return undefined;
      });
    const settled = await mapSettledLimit([...pods.values()], this.options.maxParallel ?? 16, (observed) =>
      advancePod(this.deps, observed, signal, report),
    );
    const observed = [...pods.values()];
    let cut = 0;
    const reported = settled.flatMap((s, i) => {
      if (s.status === 'fulfilled') return s.value ? [s.value] : [];
      const pod = observed[i];
      if (!pod) return [];
      // A pod that could not be moved on this round is still reported, from what was read.
      if (signal?.aborted) cut++;
      else this.options.log.warn({ err: s.reason, uid: pod.uid }, 'docker provider: moving a pod on failed');
      const read = reportPod(this.deps, pod, undefined, report);
      return read ? [read] : [];
    });
    // The caller's deadline cut the round (a busy tick): one line, not one warning per pod.
    if (cut > 0)
      this.options.log.info(
        { node: nodeName, pods: cut, of: observed.length },
        'docker provider: round cut short by its deadline: pods reported as read, moved on next round',
      );
    return reported;
  }

  containerLogs(
    pod: V1Pod,
    container: string,
    options: ContainerLogOptions,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    return containerLogs({ docker: this.options.docker, state: this.state }, pod, container, options, signal);
  }

  podStats(nodeName: string, signal?: AbortSignal): Promise<PodUsage[]> {
    return podStats(
      { docker: this.options.docker, state: this.state, clock: this.options.clock, cpu: this.cpu },
      nodeName,
      signal,
    );
  }

  /**
   * The engine's container events of `nodeName`'s pods (engine-changes.ts):
   * a start, an exit, a removal or a health status, as they happen.
   */
  watchChanges(nodeName: string, signal: AbortSignal): AsyncIterable<ProviderChange> {
    return engineChanges(this.options.docker, nodeName, signal);
  }

  /**
   * Creates and starts the infra container, also when concurrent creates of
   * the pod race for its name. Both engines reserve a name before a lookup
   * by name finds the container (Podman claims it in its storage before it
   * records the container in its database; Docker Engine reserves it before
   * the container exists): a create that loses the race is refused ("already
   * in use") while a start by that name still answers 404. Such a start is tried again, after
   * a pause, with a create first (which succeeds if the winner's create
   * failed and gave the name back), until the engine finds the container;
   * never once a removal of the pod began, which the 404 may also mean.
   */
  private async createInfra(plan: PodPlan, signal?: AbortSignal): Promise<void> {
    const { docker, settings, clock } = this.options;
    const opts = signal ? { abortSignal: signal } : {};
    for (const volume of plan.volumes) {
      await docker.createVolume({ ...volumeConfig(plan, volume), ...opts }).catch((err: unknown) => {
        if (!isNameConflict(err)) throw err;
      });
    }
    await this.deps.puller.ensure(settings.infraImage, signal);
    for (let attempt = 1; ; attempt++) {
      try {
        const selinux = await this.deps.engineSelinux();
        await docker.createContainer({ ...infraConfig(plan, settings, selinux), ...opts });
      } catch (err) {
        if (!isNameConflict(err)) throw err;
      }
      try {
        await docker.getContainer(infraName(plan.uid)).start(opts);
        return;
      } catch (err) {
        if (isNotModified(err)) return;
        if (!(isEngineNotFound(err) || isStartUnderWay(err)) || attempt >= INFRA_ATTEMPTS) throw err;
      }
      await clock.sleep(doublingDelayMs(attempt, INFRA_RETRY_MS, INFRA_RETRY_MAX_MS), signal);
      if (removalOf(plan.uid) || (await markedForDeletion(this.deps, plan.uid, signal))) return;
    }
  }

  private downwardOptions() {
    const { hostIp, allocatable } = this.options.settings;
    return { hostIp, ...(allocatable ? { allocatable } : {}) };
  }

  /** The prober report of the pods' node, when one of them has probes or hooks. */
  private async reportFor(
    pods: readonly ObservedPod[],
    signal?: AbortSignal,
  ): Promise<ProberReport | undefined> {
    const probed = pods.find((p) => needsProber(p.infra?.plan));
    return probed ? this.probers.report(probed.node, signal) : undefined;
  }

  private async markDeleting(pod: ObservedPod, deadline: Date, signal?: AbortSignal): Promise<void> {
    try {
      await this.options.docker.createContainer({
        ...deletingConfig(pod, deadline, this.options.settings),
        ...(signal ? { abortSignal: signal } : {}),
      });
    } catch (err) {
      if (!isNameConflict(err)) throw err;
    }
  }

  private async signal(id: string, signal: string, abortSignal?: AbortSignal): Promise<void> {
    this.state.invalidate(id);
    try {
      await this.options.docker.getContainer(id).kill({ signal, ...(abortSignal ? { abortSignal } : {}) });
    } catch (err) {
      if (!isEngineNotFound(err) && !isNotRunning(err)) throw err;
    }
  }
}
