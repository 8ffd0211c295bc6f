import type { V1Pod } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import { doublingDelayMs } from '../../util/doubling-delay.ts';
import {
  type FileProjection,
  type FileVolume,
  payloadDigest,
  readsPodMetadata,
  type SourceData,
  withPodMetadata,
} from '../file-volumes.ts';
import { tokenKey, tokenSources } from '../projected-token.ts';
import type { ProviderEventRecorder } from '../provider.ts';
import { readVolumePayload, type VolumeSources } from '../volume-sources.ts';
import { atomicLayout, DATA_DIR_NAME, digestOf, timestampDirName } from './atomic-layout.ts';
import { heldVolumePath } from './container-config.ts';
import { pathExists, pathStat } from './engine-archive.ts';
import { type MountWait, mountWaitOver, podVolumeNames, unableToMountMessage } from './mount-wait.ts';
import { volumeName } from './names.ts';
import type { ContainerPlan, PodPlan } from './pod-plan.ts';
import { type TarEntry, tarArchive } from './tar-archive.ts';
import { swapVolume } from './volume-swap.ts';
import { VolumeTokens } from './volume-tokens.ts';

/**
 * Fills a pod's file volumes (configMap, secret, downwardAPI, projected)
 * before any of its containers is created, as the kubelet mounts a pod's
 * volumes before it starts it: the objects are read from the API server
 * (`get`), the files laid out as the atomic writer does (atomic-layout.ts)
 * and written, as one tar archive, into the volume through the infra
 * container that holds it (an archive PUT: the engine may be remote). The
 * volumes are tmpfs: a Secret's bytes are in the engine host's memory only,
 * and go with the volume when the pod is removed. They pass through this
 * process's memory on their way and are never logged: an Event or a log line
 * names objects and keys only.
 *
 * A volume is written once, when `..data` is not in it yet (one HEAD per
 * file volume, only while a container of the pod is due to be created). A
 * missing ConfigMap or Secret (or key), not optional, keeps every container
 * from being created: a FailedMount Warning Event in the kubelet's words, and
 * another try after a back-off doubling from 2 s to 2 min (in this process;
 * another invocation tries at once).
 *
 * Updates (`refresh`): once a minute per pod (in this process; at the first
 * look after a cold start), while the pod's infra container runs, its file
 * volumes' objects are read again (one `get` per ConfigMap and Secret, and
 * the pod itself when a downwardAPI item shows labels or annotations), and a
 * volume whose files changed gets a new timestamped directory, then `..data`
 * swapped to it by a rename in a short-lived container of the relay image
 * (busybox) that mounts the volume (the archive API cannot rename, the pause
 * image has no shell). A change of the pod's labels or annotations arrives
 * through updatePod and refreshes at once. The digest of a volume's files is
 * the end of its timestamped directory's name (so a cold start tells a
 * changed payload from the one written with one HEAD), never stored
 * elsewhere. subPath mounts keep the file they were made with, as on a
 * kubelet.
 *
 * Projected service account tokens: volume-tokens.ts.
 */

export type { VolumeSources } from '../volume-sources.ts';

/** How often a running pod's file volumes are read again. */
export const REFRESH_MS = 60_000;
const RETRY_MS = 2_000;
const RETRY_MAX_MS = 120_000;
/** Pods remembered (delivered volumes, back-offs): one entry per pod this process saw. */
const MAX_REMEMBERED = 10_000;

export interface VolumeDeliveryDeps {
  docker: Docker;
  sources: VolumeSources;
  clock: Clock;
  log: Logger;
  events?: ProviderEventRecorder;
  /** The swap's image (busybox: `sh`, `mv -T`, `ln`, `rm`), pulled before its first use. */
  swapImage: string;
  pullImage: (image: string, signal?: AbortSignal) => Promise<void>;
  /** The token refresh's jitter draw in [0, 1); Math.random unless given. */
  random?: () => number;
}

export class VolumeDelivery {
  /** Infra container ids whose file volumes are all written. */
  readonly #delivered = new Set<string>();
  readonly #retry = new Map<string, { attempt: number; at: number }>();
  /** When each infra container's volumes are due to be read again. */
  readonly #refreshAt = new Map<string, number>();
  /** The digest of what each volume holds, by `<infra id>/<volume>`, as last seen or written. */
  readonly #digests = new Map<string, string>();
  /** Pods whose volumes could not be filled yet, since when (mount-wait.ts). */
  readonly #waits = new Map<string, MountWait>();
  readonly #tokens: VolumeTokens;

  constructor(private readonly deps: VolumeDeliveryDeps) {
    this.#tokens = new VolumeTokens(deps);
  }

  /**
   * Whether every file volume of the pod holds its files, writing those that
   * do not. False when one cannot be filled yet (its Event recorded).
   * `pod` is the pod as reported, for the Event.
   */
  async ensure(plan: PodPlan, infraId: string, pod: () => V1Pod, signal?: AbortSignal): Promise<boolean> {
    const volumes = plan.volumes.filter((v) => v.files);
    if (volumes.length === 0 || this.#delivered.has(infraId)) return true;
    const now = this.deps.clock.now();
    const retry = this.#retry.get(plan.uid);
    if (retry && now < retry.at) return this.#stillWaiting(plan, pod);
    for (const volume of volumes) {
      const files = volume.files;
      if (!files) continue;
      const dir = heldVolumePath(volume.name);
      if (await pathExists(this.deps.docker, infraId, `${dir}/${DATA_DIR_NAME}`, signal)) continue;
      const payload = await this.#payload(plan, infraId, volume.name, files, signal);
      if ('error' in payload) {
        await this.#failed(plan, volume.name, payload.error, pod);
        return this.#stillWaiting(plan, pod, [volume.name]);
      }
      const digest = payloadDigest(payload.files);
      const layout = atomicLayout(payload.files, timestampDirName(new Date(now), digest), plan.fsGroup);
      await this.deps.docker.getContainer(infraId).putArchive(tarArchive(layout, new Date(now)), {
        path: dir,
        ...(signal ? { abortSignal: signal } : {}),
      });
    }
    this.#retry.delete(plan.uid);
    this.#waits.delete(plan.uid);
    remember(this.#delivered, infraId);
    this.#refreshAt.set(infraId, now + REFRESH_MS);
    return true;
  }

  /**
   * Forgets what was seen of an infra container's volumes: it was not
   * running, and a tmpfs volume loses its files when nothing holds it, so
   * the next look checks for them again.
   */
  forget(infraId: string): void {
    this.#delivered.delete(infraId);
    this.#refreshAt.delete(infraId);
    for (const key of this.#digests.keys()) if (key.startsWith(`${infraId}/`)) this.#digests.delete(key);
    this.#tokens.forget(infraId);
  }

  /**
   * Brings the files of the pod's filled volumes up to date when a minute
   * passed since they were last read, or at once with `pod` (an update of
   * the pod's metadata). A source that cannot be read, or is missing, leaves
   * the files as they are (as the kubelet leaves them), with a log line.
   */
  async refresh(plan: PodPlan, infraId: string, pod?: V1Pod, signal?: AbortSignal): Promise<void> {
    const volumes = plan.volumes.filter((v) => v.files);
    if (volumes.length === 0) return;
    const now = this.deps.clock.now();
    if (!pod && now < (this.#refreshAt.get(infraId) ?? 0)) return;
    this.#refreshAt.set(infraId, now + REFRESH_MS);
    if (this.#refreshAt.size > MAX_REMEMBERED)
      this.#refreshAt.delete(this.#refreshAt.keys().next().value ?? '');
    let current = pod;
    for (const volume of volumes) {
      let files = volume.files as FileVolume;
      if (readsPodMetadata(files)) {
        current ??= await this.deps.sources.pod?.(plan.namespace, plan.name);
        if (current?.metadata?.uid !== plan.uid) continue;
        files = withPodMetadata(files, current);
      }
      const key = `${infraId}/${volume.name}`;
      let written = this.#digests.get(key);
      if (written === undefined) {
        const target = (
          await pathStat(this.deps.docker, infraId, `${heldVolumePath(volume.name)}/${DATA_DIR_NAME}`, signal)
        )?.linkTarget;
        // Not filled yet (ensure's business), or not by this provider's layout.
        written = target === undefined ? undefined : digestOf(target.split('/').pop() ?? '');
        if (written === undefined) continue;
      }
      const payload = await this.#payload(plan, infraId, volume.name, files, signal);
      if ('error' in payload) {
        this.deps.log.info(
          { pod: `${plan.namespace}/${plan.name}`, uid: plan.uid, volume: volume.name },
          `docker provider: volume not updated: ${payload.error}`,
        );
        continue;
      }
      const digest = payloadDigest(payload.files);
      if (
        digest !== written &&
        !(await swapVolume(this.deps, plan, volume.name, infraId, payload.files, digest, signal))
      ) {
        // Not swapped (a concurrent swap stood in the way): read what the volume holds at the next refresh.
        this.#digests.delete(key);
        continue;
      }
      this.#digests.set(key, digest);
      if (this.#digests.size > MAX_REMEMBERED) this.#digests.delete(this.#digests.keys().next().value ?? '');
    }
  }

  async #payload(
    plan: PodPlan,
    infraId: string,
    volume: string,
    files: FileVolume,
    signal?: AbortSignal,
  ): Promise<{ files: FileProjection[] } | { error: string }> {
    const tokens = new Map<string, SourceData>();
    for (const source of tokenSources(files)) {
      signal?.throwIfAborted();
      const token = await this.#tokens.token(plan, infraId, volume, source, signal);
      if ('error' in token) return token;
      tokens.set(tokenKey(source.path), new Map([['token', token.token]]));
    }
    return readVolumePayload(this.deps.sources, plan.namespace, files, signal, tokens);
  }

  /** False, after the kubelet's summary Event once the pod waited 2 min 3 s for its volumes (mount-wait.ts). */
  async #stillWaiting(plan: PodPlan, pod: () => V1Pod, unmounted?: readonly string[]): Promise<false> {
    const now = this.deps.clock.now();
    const wait = this.#waits.get(plan.uid) ?? { since: now, unmounted: [] };
    const current = { since: wait.since, unmounted: unmounted ?? wait.unmounted };
    if (mountWaitOver(current.since, now)) {
      await this.deps.events?.record(
        pod(),
        'Warning',
        'FailedMount',
        unableToMountMessage(current.unmounted, podVolumeNames(plan)),
      );
      current.since = now;
    }
    this.#waits.set(plan.uid, current);
    if (this.#waits.size > MAX_REMEMBERED) this.#waits.delete(this.#waits.keys().next().value ?? '');
    return false;
  }

  async #failed(plan: PodPlan, volume: string, error: string, pod: () => V1Pod): Promise<void> {
    const attempt = (this.#retry.get(plan.uid)?.attempt ?? 0) + 1;
    this.#retry.set(plan.uid, {
      attempt,
      at: this.deps.clock.now() + doublingDelayMs(attempt, RETRY_MS, RETRY_MAX_MS),
    });
    if (this.#retry.size > MAX_REMEMBERED) this.#retry.delete(this.#retry.keys().next().value ?? '');
    const message = `MountVolume.SetUp failed for volume "${volume}" : ${error}`;
    this.deps.log.info(
      { pod: `${plan.namespace}/${plan.name}`, uid: plan.uid, volume, attempt },
      `docker provider: ${message}`,
    );
    await this.deps.events?.record(pod(), 'Warning', 'FailedMount', message);
  }

  /**
   * The engine-host directories of the volumes `container`'s subPath mounts
   * use, by Kubernetes volume name, each subPath of an emptyDir made first
   * (as the kubelet makes it). A subPath whose path in the volume goes
   * through a symlink is refused (a container could otherwise have another
   * mount a path of its choosing on the host): checked just before the
   * create, not proof against a container that swaps a directory for a link
   * in between.
   */
  async subPathDirs(
    plan: PodPlan,
    container: ContainerPlan,
    infraId: string,
    mountpoints: Map<string, string>,
    signal?: AbortSignal,
  ): Promise<Map<string, string>> {
    const dirs = new Map<string, string>();
    const { docker } = this.deps;
    for (const mount of container.mounts) {
      if (!mount.subPath) continue;
      const volume = plan.volumes.find((v) => v.name === mount.volume);
      if (!volume?.held) throw new Error(`volume ${mount.volume} of a subPath mount is not held by the pod`);
      const base = heldVolumePath(volume.name);
      if (!volume.files) {
        const parts = mount.subPath.split('/');
        for (let i = 1; i <= parts.length; i++) {
          const at = `${base}/${parts.slice(0, i).join('/')}`;
          const stat = await pathStat(docker, infraId, at, signal);
          if (stat?.linkTarget)
            throw new Error(`volumeMounts[${mount.volume}].subPath ${mount.subPath} goes through a symlink`);
        }
        const entries: TarEntry[] = parts.map((_, i) => ({
          type: 'dir',
          name: parts.slice(0, i + 1).join('/'),
          mode: 0o777,
        }));
        await docker.getContainer(infraId).putArchive(tarArchive(entries, new Date(this.deps.clock.now())), {
          path: base,
          ...(signal ? { abortSignal: signal } : {}),
        });
      }
      dirs.set(mount.volume, await volumeMountpoint(docker, volumeName(plan.uid, volume.name), mountpoints));
    }
    return dirs;
  }
}

/** A volume's directory on the engine host, inspected once per process. */
export async function volumeMountpoint(
  docker: Docker,
  name: string,
  mountpoints: Map<string, string>,
): Promise<string> {
  let mountpoint = mountpoints.get(name);
  if (!mountpoint) {
    mountpoint = (await docker.getVolume(name).inspect()).Mountpoint;
    mountpoints.set(name, mountpoint);
    // Bounded: one entry per volume this process created an instance with.
    if (mountpoints.size > MAX_REMEMBERED) mountpoints.delete(mountpoints.keys().next().value ?? '');
  }
  return mountpoint;
}

function remember(set: Set<string>, value: string): void {
  set.add(value);
  if (set.size > MAX_REMEMBERED) set.delete(set.values().next().value ?? '');
}
