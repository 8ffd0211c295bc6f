import type { Task } from '@aws-sdk/client-ecs';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import type { EcsPodStore } from './ecs-pod-store.ts';
import type { EcsTasks } from './ecs-tasks.ts';
import { nodeStartedBy, parseTaskGroup, TAG_NAME, TAG_NAMESPACE, TAG_UID } from './run-task-input.ts';

/**
 * Tasks this deployment started for a node that no record holds: a record
 * lost (a table restored from a backup) or a task someone started with our
 * marks. Listed as pods (from their tags) so that pod-status's dangling pass
 * deletes those whose pod the API server does not have; only tasks whose
 * startedBy is one of our nodes' are ever seen, so nothing else is touched.
 *
 * ListTasks runs at most once per poll interval per node and sandbox: the
 * dangling pass needs it every few minutes, and pod-status lists pods every
 * few seconds.
 */
export interface OrphanTasksOptions {
  tasks: EcsTasks;
  store: EcsPodStore;
  clock: Clock;
  familyPrefix: string;
  pollMs: number;
}

interface Orphan {
  arn: string;
  pod: V1Pod;
}

export class OrphanTasks {
  readonly #listedAt = new Map<string, number>();
  readonly #orphans = new Map<string, Orphan[]>();

  constructor(private readonly options: OrphanTasksOptions) {}

  /** Pods for the node's running tasks whose uid has no held record. */
  async list(node: string, knownUids: ReadonlySet<string>, signal?: AbortSignal): Promise<V1Pod[]> {
    const { clock, pollMs } = this.options;
    const listedAt = this.#listedAt.get(node);
    if (listedAt === undefined || clock.now() - listedAt >= pollMs)
      await this.refresh(node, knownUids, signal);
    return (this.#orphans.get(node) ?? [])
      .filter((o) => !knownUids.has(o.pod.metadata?.uid ?? ''))
      .map((o) => o.pod);
  }

  /** Stops the orphan task of this pod's uid, if there is one; whether there was. */
  async stop(pod: V1Pod, signal?: AbortSignal): Promise<boolean> {
    const uid = pod.metadata?.uid;
    const node = pod.spec?.nodeName;
    if (!uid || !node) return false;
    let orphan = this.#orphans.get(node)?.find((o) => o.pod.metadata?.uid === uid);
    if (!orphan) {
      await this.refresh(node, new Set(), signal);
      orphan = this.#orphans.get(node)?.find((o) => o.pod.metadata?.uid === uid);
    }
    if (!orphan) return false;
    await this.options.tasks.stop(
      orphan.arn,
      `pod ${pod.metadata?.namespace}/${pod.metadata?.name} unknown to the API server`,
      signal,
    );
    this.#orphans.set(
      node,
      (this.#orphans.get(node) ?? []).filter((o) => o !== orphan),
    );
    return true;
  }

  private async refresh(node: string, knownUids: ReadonlySet<string>, signal?: AbortSignal): Promise<void> {
    const { tasks, store, clock, familyPrefix } = this.options;
    const arns = await tasks.list(nodeStartedBy(familyPrefix, node), 'RUNNING', signal);
    const { tasks: described } = arns.length > 0 ? await tasks.describe(arns, signal) : { tasks: [] };
    const orphans: Orphan[] = [];
    for (const task of described) {
      const pod = taskPod(task, node);
      const uid = pod?.metadata?.uid;
      if (!pod || !uid || !task.taskArn || knownUids.has(uid) || task.desiredStatus === 'STOPPED') continue;
      const record = await store.getByUid(uid);
      if (record && record.goneAt === undefined) continue;
      orphans.push({ arn: task.taskArn, pod });
    }
    this.#orphans.set(node, orphans);
    this.#listedAt.set(node, clock.now());
  }
}

/** A task as the pod its tags and group name; undefined when it carries neither. */
function taskPod(task: Task, node: string): V1Pod | undefined {
  const tag = (key: string) => task.tags?.find((t) => t.key === key)?.value;
  const uid = tag(TAG_UID) ?? parseTaskGroup(task.group)?.uid;
  const namespace = tag(TAG_NAMESPACE);
  const name = tag(TAG_NAME);
  if (!uid || !namespace || !name) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace, name, uid },
    spec: {
      nodeName: node,
      containers: (task.containers ?? []).map((c) => ({ name: c.name ?? '', image: c.image ?? '' })),
    },
    status: { phase: task.lastStatus === 'RUNNING' ? 'Running' : 'Pending' },
  };
}
