import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import type { FileProjection } from '../file-volumes.ts';
import { ProviderNotFoundError, ProviderWaitingError } from '../provider.ts';
import { readVolumePayload, type VolumeSources } from '../volume-sources.ts';
import type { EcsPodAdvancer } from './ecs-pod-advance.ts';
import type { EcsPodRecord, RestartPolicy, RunSpec } from './ecs-pod-record.ts';
import { type EcsPodStore, isRecordConflict } from './ecs-pod-store.ts';
import type { EcsTasks } from './ecs-tasks.ts';
import { healthMapping } from './health-checks.ts';
import { type OverrideRule, podOverrides } from './override-allowlist.ts';
import type { SecretParameters } from './secret-parameters.ts';
import type { TaskDefinitions } from './task-definitions.ts';
import { isStopped } from './task-snapshot.ts';
import {
  type TaskTranslation,
  TaskTranslationError,
  type TranslationSettings,
  translatePod,
} from './task-translation.ts';
import { podFileVolumes } from './volume-writer.ts';

/**
 * createPod and updatePod of the ECS provider: translate the pod, register
 * its task definition (once per shape), store its Secret values, write its
 * record, then let the advancer start its task. Every step is safe to
 * repeat, so a create retried after a crash at any point finishes the same
 * pod with the same task.
 */

export interface PodCreatorOptions {
  store: EcsPodStore;
  advancer: EcsPodAdvancer;
  secrets: SecretParameters;
  definitions: TaskDefinitions;
  tasks: EcsTasks;
  clock: Clock;
  log: Logger;
  translation: Omit<TranslationSettings, 'secretParameterName' | 'volumeFiles'>;
  allowlist: readonly OverrideRule[];
  /** Where file volumes' ConfigMaps and Secrets are read (none: a pod with such volumes is not started). */
  volumeSources?: VolumeSources;
  /** The node's allocatable: what a downwardAPI volume's resourceFieldRef on a missing limit shows (as env does). */
  allocatable?: Readonly<Record<string, string>>;
}

const MAX_ATTEMPTS = 5;

/** A pod translated for this provider: what its record needs besides its tasks. */
interface Prepared {
  translation: TaskTranslation;
  run: RunSpec;
}

export class PodCreator {
  constructor(private readonly options: PodCreatorOptions) {}

  async create(pod: V1Pod, signal?: AbortSignal): Promise<EcsPodRecord | undefined> {
    const { namespace, name, uid } = identity(pod, true);
    const prepared = await this.prepare(pod, { files: true, signal });
    for (let attempt = 1; ; attempt++) {
      const existing = await this.options.store.get(namespace, name);
      try {
        if (existing?.uid === uid && existing.goneAt === undefined)
          return await this.resume(existing, prepared, signal);
        if (existing && existing.uid !== uid && existing.goneAt === undefined)
          await this.retire(existing, signal);
        return await this.start(pod, prepared, existing, signal);
      } catch (err) {
        if (!isRecordConflict(err) || attempt >= MAX_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Applies a changed spec: a new task shape replaces the running task (it
   * is stopped and followed at once by one of the new shape, restartCount + 1),
   * as the kubelet restarts a container whose image changed. The files of
   * file volumes are not compared (they are not even read unless the shape
   * changed): a task keeps the files it started with.
   * @throws ProviderNotFoundError when this uid is not held.
   */
  async update(pod: V1Pod, signal?: AbortSignal): Promise<EcsPodRecord> {
    const { namespace, name, uid } = identity(pod, false);
    let prepared = await this.prepare(pod, { files: false, signal });
    const record = await this.options.store.get(namespace, name);
    if (
      !record ||
      record.uid !== uid ||
      record.goneAt !== undefined ||
      record.deleteRequestedAt !== undefined
    )
      throw new ProviderNotFoundError(`ECS provider has no pod ${namespace}/${name} (uid ${uid})`);
    if (sameShape(record, prepared)) return (await this.options.advancer.advance(record, signal)) ?? record;
    prepared = await this.prepare(pod, { files: true, signal });
    const arn = await this.options.definitions.ensure(
      prepared.translation.family,
      prepared.translation.definition,
      signal,
    );
    const wanted = prepared.translation.secrets.map((s) => s.parameter);
    // The record lists the parameters before they are acquired, as start() writes it before
    // acquiring: a crash in between leaves them on the record, released with the pod.
    const listed = await this.listParameters(record, wanted);
    await this.options.secrets.acquire(uid, prepared.translation.secrets, signal);
    const running = record.current.arn !== undefined && !isStopped(record.current.snapshot);
    const next = await this.options.advancer.write(
      listed,
      (r) => ({
        ...r,
        ...containerRefs(pod),
        family: prepared.translation.family,
        taskDefinitionArn: arn,
        run: prepared.run,
        shape: prepared.translation.shape,
        current: running ? { ...r.current, replaced: true } : r.current,
      }),
      signal,
    );
    // The old spec's parameters stay listed until released, so a crash here leaves them to the pod's delete.
    const stale = record.secretParameters.filter((p) => !wanted.includes(p));
    await this.options.secrets.release(uid, stale, signal);
    const settled =
      next && stale.length > 0
        ? await this.options.advancer.write(
            next,
            (r) => ({ ...r, secretParameters: r.secretParameters.filter((p) => !stale.includes(p)) }),
            signal,
          )
        : next;
    this.options.log.info(
      { pod: `${namespace}/${name}`, uid, family: prepared.translation.family },
      'pod spec changed: replacing its task',
    );
    return settled ?? next ?? record;
  }

  /**
   * Translation and overrides, with the files of the pod's file volumes
   * read when `files` (its shape only otherwise); throws before anything is
   * written, ProviderWaitingError when a volume's object or key is missing.
   */
  private async prepare(
    pod: V1Pod,
    read: { files: boolean; signal?: AbortSignal | undefined },
  ): Promise<Prepared> {
    const overrides = podOverrides(pod, this.options.allowlist);
    if (!overrides.ok) throw new TaskTranslationError(overrides.reasons);
    const secretParameterName = await this.options.secrets.namer();
    const settings = { ...this.options.translation, secretParameterName };
    let translation = translatePod(pod, settings);
    const volumeFiles = read.files ? await this.readVolumes(pod, read.signal) : undefined;
    if (volumeFiles) translation = translatePod(pod, { ...settings, volumeFiles });
    const { taskRoleArn, subnets, securityGroups, spot } = overrides.overrides;
    const run: RunSpec = {
      containerOverrides: translation.containerOverrides,
      ...(taskRoleArn ? { taskRoleArn } : {}),
      ...(subnets ? { subnets: [...subnets] } : {}),
      ...(securityGroups ? { securityGroups: [...securityGroups] } : {}),
      ...(spot !== undefined ? { spot } : {}),
    };
    return { translation, run };
  }

  /**
   * The files of the pod's file volumes, by volume name (undefined when it
   * has none), read as the kubelet reads them when it mounts the volumes.
   * @throws ProviderWaitingError with the kubelet's FailedMount message when one cannot be filled yet.
   */
  private async readVolumes(
    pod: V1Pod,
    signal?: AbortSignal,
  ): Promise<Map<string, readonly FileProjection[]> | undefined> {
    const { allocatable } = this.options;
    const volumes = podFileVolumes(pod, allocatable ? { allocatable } : {});
    if (volumes.length === 0) return undefined;
    const sources = this.options.volumeSources;
    if (!sources) throw new Error('the ECS provider was built without a reader of ConfigMaps and Secrets');
    const files = new Map<string, readonly FileProjection[]>();
    for (const { volume, plan } of volumes) {
      const payload = await readVolumePayload(sources, pod.metadata?.namespace ?? '', plan, signal);
      if ('error' in payload)
        throw new ProviderWaitingError(
          'FailedMount',
          `MountVolume.SetUp failed for volume "${volume.name}" : ${payload.error}`,
        );
      files.set(volume.name, payload.files);
    }
    return files;
  }

  /** The same uid again (a retried create): finishes what the first one started. */
  private async resume(
    record: EcsPodRecord,
    prepared: Prepared,
    signal?: AbortSignal,
  ): Promise<EcsPodRecord | undefined> {
    const { advancer, secrets, clock } = this.options;
    const notStarted = record.current.arn === undefined;
    if (!notStarted && record.current.launchFailure === undefined) return advancer.advance(record, signal);
    // Nothing runs yet: start with the pod as it is now (its Secret values may have changed).
    const arn = await this.options.definitions.ensure(
      prepared.translation.family,
      prepared.translation.definition,
      signal,
    );
    // Listed on the record before they are acquired (as start() does): a crash in between leaks nothing.
    const listed = await this.listParameters(
      record,
      prepared.translation.secrets.map((s) => s.parameter),
    );
    await secrets.acquire(record.uid, prepared.translation.secrets, signal);
    const retry = record.current.launchFailure !== undefined;
    return advancer.write(
      listed,
      (r) => ({
        ...r,
        family: prepared.translation.family,
        taskDefinitionArn: arn,
        run: prepared.run,
        shape: prepared.translation.shape,
        ...(retry && r.current.launchFailure !== undefined
          ? { current: { seq: r.current.seq + 1, requestedAt: clock.now() } }
          : {}),
      }),
      signal,
    );
  }

  /**
   * Adds `parameters` to the record's Secret parameters (nothing else, no
   * advance), re-reading on a lost race: what the pod's delete releases.
   * @throws ProviderNotFoundError when the name no longer holds this uid.
   */
  private async listParameters(record: EcsPodRecord, parameters: readonly string[]): Promise<EcsPodRecord> {
    const { store } = this.options;
    let current = record;
    for (let attempt = 1; ; attempt++) {
      const missing = parameters.filter((p) => !current.secretParameters.includes(p));
      if (missing.length === 0) return current;
      try {
        return await store.replace(current, {
          ...current,
          secretParameters: [...current.secretParameters, ...missing],
        });
      } catch (err) {
        if (!isRecordConflict(err) || attempt >= MAX_ATTEMPTS) throw err;
      }
      const again = await store.get(current.namespace, current.name);
      if (!again || again.uid !== current.uid || again.goneAt !== undefined)
        throw new ProviderNotFoundError(
          `ECS provider has no pod ${current.namespace}/${current.name} (uid ${current.uid})`,
        );
      current = again;
    }
  }

  /** Another pod (uid) under this name: its task is stopped, its Secret values released; the new pod takes the name. */
  private async retire(old: EcsPodRecord, signal?: AbortSignal): Promise<void> {
    if (old.current.arn && !isStopped(old.current.snapshot)) {
      await this.options.tasks.stop(
        old.current.arn,
        `pod ${old.namespace}/${old.name} replaced by a new pod`,
        signal,
      );
    }
    await this.options.secrets.release(old.uid, old.secretParameters, signal);
    this.options.log.info(
      { pod: `${old.namespace}/${old.name}`, oldUid: old.uid },
      'pod replaced by a new uid: its task stopped',
    );
  }

  private async start(
    pod: V1Pod,
    prepared: Prepared,
    existing: EcsPodRecord | undefined,
    signal?: AbortSignal,
  ): Promise<EcsPodRecord | undefined> {
    const { definitions, secrets, store, clock, advancer } = this.options;
    const { namespace, name, uid, node } = identity(pod, true);
    const arn = await definitions.ensure(
      prepared.translation.family,
      prepared.translation.definition,
      signal,
    );
    const now = clock.now();
    const again = existing?.uid === uid ? existing : undefined;
    const record: EcsPodRecord = {
      namespace,
      name,
      uid,
      node,
      restartPolicy: restartPolicy(pod.spec?.restartPolicy),
      ...containerRefs(pod),
      gracePeriodSeconds: pod.spec?.terminationGracePeriodSeconds ?? 30,
      family: prepared.translation.family,
      taskDefinitionArn: arn,
      run: prepared.run,
      shape: prepared.translation.shape,
      secretParameters: prepared.translation.secrets.map((s) => s.parameter),
      createdAt: now,
      restarts: 0,
      current: { seq: again ? again.current.seq + 1 : 0, requestedAt: now },
      observedAt: now,
      creates: (again?.creates ?? 0) + 1,
      deletes: again?.deletes ?? 0,
      version: (existing?.version ?? 0) + 1,
    };
    await store.create(record, existing);
    await secrets.acquire(uid, prepared.translation.secrets, signal);
    return advancer.advance(record, signal);
  }
}

function identity(
  pod: V1Pod,
  needsNode: boolean,
): { namespace: string; name: string; uid: string; node: string } {
  const namespace = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  const uid = pod.metadata?.uid ?? '';
  const node = pod.spec?.nodeName ?? '';
  const missing = [
    ...(namespace ? [] : ['metadata.namespace']),
    ...(name ? [] : ['metadata.name']),
    ...(uid ? [] : ['metadata.uid']),
    ...(node || !needsNode ? [] : ['spec.nodeName']),
  ];
  if (missing.length > 0)
    throw new Error(`ECS provider: pod ${namespace || '?'}/${name || '?'} lacks ${missing.join(', ')}`);
  return { namespace, name, uid, node };
}

function containerRefs(pod: V1Pod): Pick<EcsPodRecord, 'initContainers' | 'containers'> {
  const refs = (list: readonly V1Container[]) =>
    list.map((c) => {
      const { health } = healthMapping(c);
      return { name: c.name, image: c.image ?? '', ...(health ? { health } : {}) };
    });
  return {
    initContainers: refs(pod.spec?.initContainers ?? []),
    containers: refs(pod.spec?.containers ?? []),
  };
}

function restartPolicy(policy: string | undefined): RestartPolicy {
  return policy === 'Never' || policy === 'OnFailure' ? policy : 'Always';
}

function sameRun(a: RunSpec, b: RunSpec): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Whether the pod as updated runs as its record's task does: the same
 * shape (the translation without the files of file volumes) and the same
 * run besides the overrides (which the shape covers, but the volume
 * writer's); a record written before shapes compares family and run.
 */
function sameShape(record: EcsPodRecord, prepared: Prepared): boolean {
  if (record.shape === undefined)
    return record.family === prepared.translation.family && sameRun(record.run, prepared.run);
  const { containerOverrides: _a, ...was } = record.run;
  const { containerOverrides: _b, ...now } = prepared.run;
  return record.shape === prepared.translation.shape && JSON.stringify(was) === JSON.stringify(now);
}
