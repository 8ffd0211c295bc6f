import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import {
  type AppliedPodStatus,
  type ContainerLogOptions,
  type PodProvider,
  ProviderNotFoundError,
} from '../provider.ts';
import type { EcsLogs } from './ecs-logs.ts';
import type { EcsPodAdvancer } from './ecs-pod-advance.ts';
import type { EcsPodRecord } from './ecs-pod-record.ts';
import { ecsPodObject, ecsPodStatus } from './ecs-pod-status.ts';
import type { EcsPodStore } from './ecs-pod-store.ts';
import { deleteRequested } from './ecs-pod-transitions.ts';
import type { EcsTasks } from './ecs-tasks.ts';
import { LaunchFailedError } from './ecs-tasks.ts';
import type { OrphanTasks } from './orphan-tasks.ts';
import type { PodCreator } from './pod-creator.ts';
import { isStopped } from './task-snapshot.ts';

/**
 * The pod part of the ECS Fargate provider: each pod is one ECS task at a
 * time (a new task when it restarts). What it knows of a pod is its record
 * in the state table (ecs-pod-record.ts), kept current by the task-state
 * events the ECS Task State Change rule pushes and, as the safety net, by
 * DescribeTasks when nothing was heard of a task for `pollMs`. Every look
 * at a pod (createPod, getPod, listPods, an event) also moves it on
 * (ecs-pod-advance.ts): starts its task, restarts it after the kubelet's
 * back-off, stops it after a delete.
 */

export interface EcsPodProviderOptions {
  store: EcsPodStore;
  advancer: EcsPodAdvancer;
  creator: PodCreator;
  tasks: EcsTasks;
  orphans: OrphanTasks;
  logs: EcsLogs;
  clock: Clock;
  log: Logger;
  /** The hostIP of every pod (the node's InternalIP); none when absent. */
  hostIp?: string;
  /** DescribeTasks batches in flight at once, and pods advanced at once. */
  maxParallel: number;
  pollMs: number;
}

export class EcsPodProvider implements PodProvider {
  constructor(private readonly options: EcsPodProviderOptions) {}

  /**
   * Starts the pod's task, or finds it started (the same uid: nothing starts
   * twice). A pod of another uid under this name is stopped and replaced.
   * @throws TaskTranslationError naming what Fargate cannot run, or an
   *   override the allowlist refuses; nothing is started then.
   * @throws LaunchFailedError when ECS started no task (its reason).
   */
  async createPod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const record = await this.options.creator.create(pod, signal);
    if (record?.current.launchFailure) throw new LaunchFailedError(record.current.launchFailure);
    return record ? ecsPodStatus(record, this.options.hostIp) : undefined;
  }

  /**
   * A pod's spec changes only in its images (and metadata) once created:
   * a changed task shape replaces the running task with one of the new shape.
   * @throws ProviderNotFoundError when this uid does not run.
   */
  async updatePod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const record = await this.options.creator.update(pod, signal);
    return ecsPodStatus(record, this.options.hostIp);
  }

  /**
   * Asks ECS to stop the pod's task (containers get SIGTERM, then SIGKILL
   * after their stopTimeout, the pod's grace period up to Fargate's 120 s).
   * The pod is listed until its task stopped. Safe to repeat.
   * @throws ProviderNotFoundError when this uid is not held (never created, gone, replaced).
   */
  async deletePod(pod: V1Pod, signal?: AbortSignal): Promise<void> {
    const { store, advancer, orphans, clock } = this.options;
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    const record = await store.get(namespace, name);
    if (!record || record.uid !== uid || record.goneAt !== undefined) {
      if (await orphans.stop(pod, signal)) return;
      throw new ProviderNotFoundError(`ECS provider has no pod ${namespace}/${name} (uid ${uid})`);
    }
    if (record.deleteRequestedAt !== undefined) {
      await advancer.advance(record, signal);
      return;
    }
    await advancer.write(
      record,
      (r) => (r.deleteRequestedAt === undefined ? deleteRequested(r, clock.now()) : undefined),
      signal,
    );
  }

  async getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod | undefined> {
    const record = await this.options.store.get(namespace, name);
    if (!record || record.goneAt !== undefined) return undefined;
    return this.podOf(await this.options.advancer.advance(record, signal));
  }

  /**
   * The node's pods: every held record, advanced (stale tasks described in
   * batches of 100 first), plus tasks of this node that have no record
   * (found by ListTasks at most every poll interval), so that the dangling
   * pass stops them. A pod whose advance failed is listed as it was.
   */
  async listPods(nodeName: string, signal?: AbortSignal): Promise<V1Pod[]> {
    const { store, maxParallel, log } = this.options;
    const records = await this.refreshStale(await store.listNode(nodeName), signal);
    const settled = await mapSettledLimit(records, maxParallel, (r) =>
      this.options.advancer.advance(r, signal),
    );
    const pods: V1Pod[] = [];
    settled.forEach((s, i) => {
      const record = records[i];
      if (s.status === 'rejected' && record) {
        if (!signal?.aborted)
          log.warn(
            { err: s.reason, pod: `${record.namespace}/${record.name}`, uid: record.uid },
            'advancing the pod failed',
          );
      }
      const pod = this.podOf(s.status === 'fulfilled' ? s.value : record);
      if (pod) pods.push(pod);
    });
    const known = new Set(records.map((r) => r.uid));
    pods.push(...(await this.options.orphans.list(nodeName, known, signal)));
    return pods;
  }

  containerLogs(
    pod: V1Pod,
    container: string,
    options: ContainerLogOptions,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    return this.options.logs.containerLogs(pod, container, options, signal);
  }

  /** Describes, in batches of 100, the tasks of `records` nothing told us about for a poll interval. */
  private async refreshStale(records: EcsPodRecord[], signal?: AbortSignal): Promise<EcsPodRecord[]> {
    const { tasks, advancer, clock, pollMs, maxParallel } = this.options;
    const now = clock.now();
    const stale = records.filter(
      (r) => r.current.arn && !isStopped(r.current.snapshot) && now - r.observedAt >= pollMs,
    );
    if (stale.length === 0) return records;
    const { tasks: found, missing } = await tasks.describe(
      stale.flatMap((r) => (r.current.arn ? [r.current.arn] : [])),
      signal,
    );
    const byArn = new Map(found.map((t) => [t.taskArn, t]));
    const missingArns = new Set(missing);
    const refreshed = await mapSettledLimit(stale, maxParallel, async (r) => {
      const task = byArn.get(r.current.arn);
      if (task) return advancer.observe(r, task, signal);
      if (r.current.arn && missingArns.has(r.current.arn)) return advancer.missing(r, signal);
      return r;
    });
    const byUid = new Map<string, EcsPodRecord | undefined>();
    refreshed.forEach((s, i) => {
      const r = stale[i];
      if (r && s.status === 'fulfilled') byUid.set(r.uid, s.value);
    });
    return records.flatMap((r) => {
      if (!byUid.has(r.uid)) return [r];
      const next = byUid.get(r.uid);
      return next ? [next] : [];
    });
  }

  private podOf(record: EcsPodRecord | undefined): V1Pod | undefined {
    if (!record || record.goneAt !== undefined) return undefined;
    return ecsPodObject(record, this.options.hostIp);
  }
}
