import type { V1Pod } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import { type EngineSettings, instanceConfig } from './container-config.ts';
import {
  isEngineNotFound,
  isImageMissing,
  isNameConflict,
  isNotModified,
  isStartUnderWay,
} from './engine-errors.ts';
import type { EngineKind } from './engine-kind.ts';
import type { EngineState } from './engine-state.ts';
import { etcHostsBind } from './etc-hosts.ts';
import type { ImagePuller, RegistryAuth } from './image-puller.ts';
import { LABELS } from './names.ts';
import type { InfraInstance, ObservedPod } from './observed-pod.ts';
import type { PodPlan } from './pod-plan.ts';
import { allViews, type ContainerView, type PodProgress, podProgress } from './pod-progress.ts';
import { removePod } from './pod-removal.ts';
import { type ImageView, podObject, podStatus } from './pod-status.ts';
import type { ProberReport } from './prober/prober-report.ts';
import { pullScope } from './registry-auth.ts';
import { removalOf } from './removals-in-flight.ts';
import { type TerminationMessages, terminationMessageBind } from './termination-message.ts';
import type { VolumeDelivery } from './volume-delivery.ts';

export interface AdvanceDeps {
  docker: Docker;
  state: EngineState;
  puller: ImagePuller;
  settings: EngineSettings & { hostIp: string };
  /** Docker Engine or Podman, which name a joining container's hostname differently. */
  engineKind: () => Promise<EngineKind>;
  /** Whether the engine host enforces SELinux (engine-selinux.ts). */
  engineSelinux: () => Promise<boolean>;
  clock: Clock;
  log: Logger;
  /** Registry credentials for a pod's image, from its imagePullSecrets. */
  registryAuth: (plan: PodPlan, image: string) => Promise<RegistryAuth | undefined>;
  /** The termination messages of exited instances, read once per process each. */
  messages: TerminationMessages;
  /** The termination volumes' directories on the engine host, by volume name. */
  mountpoints: Map<string, string>;
  /** Fills the pods' file volumes before their containers are created. */
  volumes: VolumeDelivery;
}

/**
 * Moves one pod on by the short engine calls its state asks for (see
 * pod-progress.ts), then reports it: the executor of the pure decision.
 * Resolves with the pod as it runs, or undefined once it is gone (its
 * deletion finished, or it was a leftover without its infra container).
 * Safe to run concurrently for the same pod from several invocations: every
 * create is by a deterministic name, a start of a started container and a
 * removal of a removed one are no-ops.
 *
 * A pod being deleted (its deletion marker on the engine, or a removal
 * running in this process) is only reported while it stops, then removed:
 * nothing is created or started in it. `observed` may predate the marker (a poll lists a whole
 * node, then inspects and moves on its pods one by one), and what it shows
 * may already be the delete's doing: a container that exited on the
 * delete's SIGTERM, an instance its removal took. So before it creates or
 * starts anything, it looks for the marker once more; a delete creates the
 * marker before it signals or removes anything, so a state that a delete
 * brought about is never acted on.
 */
export async function advancePod(
  deps: AdvanceDeps,
  observed: ObservedPod,
  signal?: AbortSignal,
  /** The node's prober report, for the containers' probes and hooks. */
  report?: ProberReport,
): Promise<V1Pod | undefined> {
  const removing = removalOf(observed.uid);
  if (removing) {
    await removing;
    return undefined;
  }
  if (!observed.deleting && !observed.infra && observed.unsettled) {
    // Its infra container may be the one being created: the next look tells.
    podLogger(deps, observed).warn(
      'a container of the pod is listed but not found yet: left alone this round',
    );
    return undefined;
  }
  if (observed.deleting || !observed.infra) return finishDeletion(deps, observed, signal, report);
  const plan = observed.infra.plan;
  if (!plan) {
    podLogger(deps, observed).warn('infra container without a readable pod plan: left alone');
    return undefined;
  }
  const progress = podProgress(observed, plan, deps.clock.now());
  const writes =
    observed.infra.state !== 'running' ||
    allViews(progress).some((v) => v.step.kind === 'start' || v.step.kind === 'create');
  if (writes && (await markedForDeletion(deps, observed.uid, signal))) {
    const marked = (await deps.state.pods({ [LABELS.uid]: observed.uid }, signal)).get(observed.uid);
    if (!marked) return undefined;
    return marked.deleting
      ? finishDeletion(deps, marked, signal, report)
      : reportPod(deps, marked, undefined, report);
  }
  return moveOn(deps, observed, { ...observed.infra, plan }, progress, signal, report);
}

/** A pod with a deletion marker or without its infra container: reported while it stops, else removed. */
async function finishDeletion(
  deps: AdvanceDeps,
  observed: ObservedPod,
  signal?: AbortSignal,
  report?: ProberReport,
): Promise<V1Pod | undefined> {
  const podLog = podLogger(deps, observed);
  if (!observed.deleting) {
    // Instances without their infra container: what a deletion interrupted halfway left.
    await removePod(deps, observed, [], signal);
    podLog.info('removed the remains of a pod without its infra container');
    return undefined;
  }
  const now = deps.clock.now();
  const running = observed.instances.some((i) => i.state === 'running');
  if (now < observed.deleting.deadline && running) return reportPod(deps, observed, undefined, report);
  await removePod(deps, observed, observed.infra?.plan?.volumes.map((v) => v.name) ?? [], signal);
  podLog.info({ graceEnded: now >= observed.deleting.deadline }, 'pod deleted from the engine');
  return undefined;
}

/** Whether the pod's deletion marker is on the engine now. */
export async function markedForDeletion(
  deps: Pick<AdvanceDeps, 'state'>,
  uid: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const listed = await deps.state.containers({ [LABELS.uid]: uid }, signal);
  return listed.some((c) => c.Labels?.[LABELS.role] === 'deleting');
}

/** Makes the calls `progress` asks for (starts, creates, removals of old instances), then reports the pod. */
async function moveOn(
  deps: AdvanceDeps,
  observed: ObservedPod,
  infra: InfraInstance & { plan: PodPlan },
  progress: PodProgress,
  signal?: AbortSignal,
  report?: ProberReport,
): Promise<V1Pod | undefined> {
  const { docker, state } = deps;
  const plan = infra.plan;
  const podLog = podLogger(deps, observed);
  let changed = false;
  if (infra.state !== 'running') {
    deps.volumes.forget(infra.id);
    changed = (await startContainer(deps, plan.uid, infra.id, podLog)) || changed;
  }
  const images = new Map<string, ImageView>();
  // The kubelet mounts every volume of a pod before it creates a container: none until they are filled.
  const creates = allViews(progress).some((v) => v.step.kind === 'create');
  const mounted = !creates || (await deps.volumes.ensure(plan, infra.id, () => eventPod(plan), signal));
  for (const view of allViews(progress)) {
    const step = view.step;
    if (step.kind === 'start')
      changed = (await startContainer(deps, plan.uid, step.instance.id, podLog)) || changed;
    if (step.kind !== 'create') continue;
    const image = await deps.puller.view(
      view.plan.image,
      view.plan.pullPolicy,
      step.dueSince,
      { scope: pullScope(plan), resolve: () => deps.registryAuth(plan, view.plan.image) },
      signal,
    );
    images.set(view.plan.name, image);
    // A container with the pod's address in its env or /etc/hosts waits for the infra container's (set once it runs).
    const needsAddress =
      view.plan.addressEnv?.some((a) => a.field !== 'status.hostIP') || (plan.hostAliases?.length ?? 0) > 0;
    const addressed = !needsAddress || infra.ip !== undefined;
    if (image.kind === 'ready' && mounted && addressed)
      changed = (await createInstance(deps, plan, view, step.attempt, infra, podLog)) || changed;
  }
  for (const old of progress.garbage) {
    state.invalidate(old.id);
    await docker
      .getContainer(old.id)
      .remove({ force: true })
      .catch((err: unknown) => {
        if (!isEngineNotFound(err))
          podLog.warn({ err, container: old.id }, 'could not remove an old instance');
      });
  }
  // Changed ConfigMaps, Secrets, labels and annotations reach the files of a running pod (once a minute).
  if (infra.state === 'running' && mounted)
    await deps.volumes.refresh(plan, infra.id, undefined, signal).catch((err: unknown) => {
      podLog.warn({ err }, 'updating volumes failed');
    });
  const current = changed
    ? (await state.pods({ [LABELS.uid]: observed.uid }, signal)).get(observed.uid)
    : observed;
  if (!current) return undefined;
  const messages = await deps.messages.of(plan, infra.id, current.instances, signal);
  return reportPod(deps, current, images, report, messages);
}

/** The pod an Event of the provider is about. */
function eventPod(plan: PodPlan): V1Pod {
  return {
    metadata: { namespace: plan.namespace, name: plan.name, uid: plan.uid },
    spec: { nodeName: plan.node, containers: [] },
  };
}

function podLogger(deps: AdvanceDeps, observed: ObservedPod): Logger {
  return deps.log.child({
    pod: `${observed.namespace}/${observed.name}`,
    uid: observed.uid,
    node: observed.node,
  });
}

/** The pod as `observed` shows it, without moving it on. */
export function reportPod(
  deps: Pick<AdvanceDeps, 'clock' | 'settings'>,
  observed: ObservedPod,
  images?: ReadonlyMap<string, ImageView>,
  report?: ProberReport,
  /** Termination messages of exited instances, by instance id. */
  messages?: ReadonlyMap<string, string>,
): V1Pod | undefined {
  const plan = observed.infra?.plan;
  if (!plan) return undefined;
  const now = deps.clock.now();
  const progress = podProgress(observed, plan, now);
  const status = podStatus({
    pod: observed,
    plan,
    progress,
    images: images ?? new Map(),
    hostIp: deps.settings.hostIp,
    now,
    ...(report ? { report } : {}),
    ...(messages ? { messages } : {}),
  });
  const pod = podObject(plan, status);
  if (observed.deleting && pod.metadata)
    pod.metadata.deletionTimestamp = new Date(observed.deleting.deadline);
  return pod;
}

/**
 * Starts a container of pod `uid`, unless a removal of the pod began here meanwhile; true when the engine
 * changed. A failure is left for the next look to see in the state.
 */
async function startContainer(deps: AdvanceDeps, uid: string, id: string, log: Logger): Promise<boolean> {
  if (removalOf(uid)) return false;
  deps.state.invalidate(id);
  try {
    await deps.docker.getContainer(id).start();
    return true;
  } catch (err) {
    if (isNotModified(err)) return false;
    // Another poller's start of it is under way: read the pod again, as it then stands.
    if (isStartUnderWay(err)) return true;
    log.warn({ err, container: id }, 'container start failed');
    return true;
  }
}

async function createInstance(
  deps: AdvanceDeps,
  plan: PodPlan,
  view: ContainerView,
  attempt: number,
  infra: InfraInstance,
  log: Logger,
): Promise<boolean> {
  if (removalOf(plan.uid)) return false;
  const infraId = infra.id;
  const bind = await terminationMessageBind(deps.docker, plan, view.plan, attempt, infraId, deps.mountpoints);
  const hosts = await etcHostsBind(deps.docker, plan, infra, deps.mountpoints, new Date(deps.clock.now()));
  const engine = await deps.engineKind();
  let id: string;
  try {
    const dirs = await deps.volumes.subPathDirs(plan, view.plan, infraId, deps.mountpoints);
    const config = instanceConfig(
      plan,
      view.plan,
      view.role,
      attempt,
      infraId,
      engine,
      [...(bind ? [bind] : []), ...(hosts ? [hosts] : [])],
      dirs,
      {
        selinux: await deps.engineSelinux(),
        hostIp: deps.settings.hostIp,
        ...(infra.ip ? { podIp: infra.ip } : {}),
      },
    );
    id = (await deps.docker.createContainer(config)).id;
  } catch (err) {
    if (isNameConflict(err)) {
      // Created by another poller, which starts it too: read the pod again, so that it is reported as it stands.
      return true;
    }
    if (isImageMissing(err)) {
      // The image went missing since it was checked: look for it again next time.
      deps.puller.forget(view.plan.image);
      log.warn({ err, container: view.plan.name }, 'image missing at create');
      return false;
    }
    // The infra container went away meanwhile (the pod is being removed): the next look sees it.
    if (isEngineNotFound(err)) return false;
    throw err;
  }
  log.info(
    { container: view.plan.name, attempt },
    attempt === 0 ? 'container created' : 'container restarted',
  );
  await startContainer(deps, plan.uid, id, log);
  return true;
}
