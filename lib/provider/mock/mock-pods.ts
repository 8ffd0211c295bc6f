import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import { type ItemKey, isConditionFailed, type StateTable } from '../../state/dynamodb.ts';
import type { Expression } from '../../state/expression.ts';
import {
  type AppliedPodStatus,
  type ContainerLogOptions,
  type DeletedPodStatus,
  type PodProvider,
  type PodUsage,
  type ProviderEventRecorder,
  ProviderNotFoundError,
} from '../provider.ts';
import { mockContainerLog } from './mock-logs.ts';
import { mockCreateIntent, mockPodPlan } from './mock-pod-plan.ts';
import {
  type MockPodRecord,
  mockNodeIndexPartition,
  mockPodFromItem,
  mockPodHeld,
  mockPodItem,
  mockPodKey,
} from './mock-pod-record.ts';
import { podIdentity, podState } from './mock-pod-spec.ts';
import { mockHostIp, mockPodObject } from './mock-pod-status.ts';
import { MockProbeEvents } from './mock-probe-events.ts';
import { mockPodUsage } from './mock-stats.ts';

/**
 * The pod part of the mock provider. Lambda invocations share no memory, so
 * its pods live in the state table, one item per namespace/name:
 *
 * | attribute | value |
 * | --- | --- |
 * | pk, sk | `mock#pods#<namespace>`, `<name>` |
 * | gsi1pk, gsi1sk | `mock#node#<node>`, `<namespace>/<name>` (removed on delete, or kept while a graceful stop lasts) |
 * | namespace, name, uid, node, restartPolicy | the pod's identity and binding |
 * | containers, initContainers | `[{ name, image, run? }]`, run = what the command does (mock-command.ts) |
 * | plan | `{ startDelaySeconds, finishAfterSeconds?, exitCode }` from the annotations |
 * | createdAt | epoch ms when this uid was started: every status derives from it and the clock |
 * | deletedAt, stopAt, expiresAt | set by delete: epoch ms of the delete and of the last process's stop, and epoch s for DynamoDB's TTL |
 * | creates, updates, deletes | calls that changed this uid's pod (for tests) |
 * | version | bumped by every write; each write is conditional on it |
 *
 * Keyed by namespace/name, not by node, because a new pod with the same name
 * replaces the old one wherever either runs. Spreading partitions by namespace
 * keeps a burst in one namespace on one partition (about 1,000 writes/s, far
 * above what the pipeline does); listing a node's pods goes through gsi1.
 *
 * A deleted pod leaves a tombstone (deletedAt, out of gsi1) instead of
 * vanishing, so that the counters survive a delete: a test can then see a pod
 * that was started again after its delete (`creates` 2). getPod and listPods
 * ignore tombstones; DynamoDB's TTL removes them after `tombstoneTtlSeconds`.
 */

export interface MockPodProviderOptions {
  table: StateTable;
  clock: Clock;
  /** Where the Events of simulated probes and hooks are recorded (Unhealthy, Killing...); none when absent. */
  events?: ProviderEventRecorder;
  /** The hostIP of every pod (e.g. the node's configured InternalIP); derived from the node name by default. */
  hostIp?: string;
  /** How long a deleted pod's tombstone stays (DynamoDB TTL). Default one day. */
  tombstoneTtlSeconds?: number;
}

// Enough for several writers racing on one name; each lost race costs a read.
const MAX_ATTEMPTS = 8;
const DEFAULT_TOMBSTONE_TTL_SECONDS = 24 * 60 * 60;

/**
 * Pods "run" at once unless annotations (mock-pod-plan.ts) or their
 * containers' commands (mock-command.ts) say otherwise: a command's run time
 * and exit code, restarts with back-off per restartPolicy, init containers
 * in order (mock-timeline.ts). Commands are read once, at create, against
 * the resolved env; only what they amount to is stored, never an env value.
 *
 * Deleting a pod stops it: at once, or, when one of its running containers
 * ignores SIGTERM (`trap '' TERM`), at the end of the delete's grace period
 * (the pod's `metadata.deletionGracePeriodSeconds`; a pod without one, as
 * when its API object is already gone, is stopped at once). Until then
 * getPod and listPods report it; afterwards getPod returns undefined, which
 * a status poller reads as the terminal state of a deleted pod.
 *
 * getPod reads strongly consistently; listPods queries gsi1, which DynamoDB
 * updates asynchronously (normally within a second): a pod created or
 * deleted a moment ago may be missing from, or still in, the list.
 *
 * It reports status at once (AppliedPodStatus): createPod and updatePod
 * resolve with the status computed from the record they wrote or found,
 * which is what getPod and listPods compute from the same record.
 */
export class MockPodProvider implements PodProvider {
  private readonly table: StateTable;
  private readonly clock: Clock;
  private readonly probeEvents: MockProbeEvents;

  constructor(private readonly options: MockPodProviderOptions) {
    this.table = options.table;
    this.clock = options.clock;
    this.probeEvents = new MockProbeEvents(options.events);
  }

  /**
   * Starts the pod, or does nothing when this uid already runs.
   * @throws Error with the annotation's message when the pod asks to fail, or
   *   naming an invalid annotation or missing field; nothing is stored then.
   */
  async createPod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const state = podState(pod);
    const intent = mockCreateIntent(pod.metadata?.annotations);
    if ('fail' in intent) throw new Error(intent.fail);
    const key = mockPodKey(state.namespace, state.name);
    // Most creates are of a name never used: try that first, one write and no read.
    let current: MockPodRecord | undefined;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      if (attempt > 1) current = await this.read(key);
      if (current && current.uid === state.uid && mockPodHeld(current, this.clock.now()))
        return this.status(current);
      const again = current?.uid === state.uid ? current : undefined;
      const record: MockPodRecord = {
        ...state,
        plan: intent.plan,
        createdAt: this.clock.now(),
        creates: (again?.creates ?? 0) + 1,
        updates: again?.updates ?? 0,
        deletes: again?.deletes ?? 0,
        version: (current?.version ?? 0) + 1,
      };
      try {
        await this.table.put(mockPodItem(record), {
          condition: current ? versionIs(current.version) : { expression: 'attribute_not_exists(pk)' },
        });
        return this.status(record);
      } catch (err) {
        // Someone else wrote this name since we read it: decide again from what they wrote.
        if (!isConditionFailed(err)) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          throw new Error(`mock createPod ${describe(state)}: lost ${attempt} races for the record`, {
            cause: err,
          });
        }
      }
    }
  }

  /**
   * Takes the pod's new container images, restartPolicy and annotations (the
   * plan stays relative to the original start).
   * @throws ProviderNotFoundError when this uid does not run.
   * @throws Error naming an invalid annotation; nothing is changed then.
   */
  async updatePod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const state = podState(pod);
    const plan = mockPodPlan(pod.metadata?.annotations);
    signal?.throwIfAborted();
    try {
      const updated = await this.table.update(
        mockPodKey(state.namespace, state.name),
        {
          expression:
            'SET #containers = :containers, #initContainers = :initContainers, #restartPolicy = :restartPolicy, #plan = :plan, #updates = #updates + :one, #version = #version + :one',
          names: {
            '#containers': 'containers',
            '#initContainers': 'initContainers',
            '#restartPolicy': 'restartPolicy',
            '#plan': 'plan',
            '#updates': 'updates',
            '#version': 'version',
          },
          values: {
            ':containers': state.containers,
            ':initContainers': state.initContainers ?? [],
            ':restartPolicy': state.restartPolicy,
            ':plan': plan,
            ':one': 1,
          },
        },
        { condition: runs(state.uid) },
      );
      return this.status(mockPodFromItem(updated));
    } catch (err) {
      if (isConditionFailed(err)) throw notFound(state, err);
      throw err;
    }
  }

  /**
   * Stops the pod when this uid runs (see the class comment for when its
   * processes end). A delete of a pod already stopping can only bring its
   * stop forward.
   * Resolves with `stopped` when the pod's processes have ended by now
   * (status at once: getPod no longer reports it).
   * @throws ProviderNotFoundError when it does not run (never created,
   *   stopped, or replaced by a pod with another uid).
   */
  async deletePod(pod: V1Pod, signal?: AbortSignal): Promise<DeletedPodStatus> {
    const ref = podIdentity(pod);
    const key = mockPodKey(ref.namespace, ref.name);
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const current = await this.read(key);
      const now = this.clock.now();
      if (!current || current.uid !== ref.uid || !mockPodHeld(current, now)) throw notFound(ref, undefined);
      const stop = this.stopTime(current, pod, now);
      const stopAt = Math.min(current.stopAt ?? Number.POSITIVE_INFINITY, stop.stopAt);
      const signalAt = Math.min(current.signalAt ?? Number.POSITIVE_INFINITY, stop.signalAt, stopAt);
      const stopped = stopAt <= now ? 'stopped' : undefined;
      if (current.deletedAt !== undefined && stopAt === current.stopAt) return stopped;
      const ttl = this.options.tombstoneTtlSeconds ?? DEFAULT_TOMBSTONE_TTL_SECONDS;
      const record: MockPodRecord = {
        ...current,
        deletedAt: current.deletedAt ?? now,
        stopAt,
        signalAt,
        deletes: current.deletes + (current.deletedAt === undefined ? 1 : 0),
        version: current.version + 1,
      };
      try {
        await this.table.put(
          { ...mockPodItem(record), expiresAt: Math.ceil(stopAt / 1000) + ttl },
          { condition: versionIs(current.version) },
        );
        return stopped;
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          throw new Error(`mock deletePod ${describe(ref)}: lost ${attempt} races for the record`, {
            cause: err,
          });
        }
      }
    }
  }

  /**
   * When a delete now signals the pod's containers and when that ends its processes: SIGTERM once the
   * preStop hooks of its running containers ran (within the grace period), the end at once, or at the end
   * of the grace period if a running container ignores SIGTERM.
   */
  private stopTime(record: MockPodRecord, pod: V1Pod, now: number): { signalAt: number; stopAt: number } {
    const grace = pod.metadata?.deletionGracePeriodSeconds ?? 0;
    if (grace <= 0) return { signalAt: now, stopAt: now };
    const status = mockPodObject(record, now, this.hostIp(record.node)).status;
    const running = new Set(
      [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])]
        .filter((c) => c.state?.running)
        .map((c) => c.name),
    );
    const containers = [...(record.initContainers ?? []), ...record.containers].filter((c) =>
      running.has(c.name),
    );
    const preStopMs = Math.max(0, ...containers.map((c) => (c.probes?.preStopSeconds ?? 0) * 1000));
    const signalAt = now + Math.min(preStopMs, grace * 1000);
    const ignoring = containers.some((c) => c.run?.ignoresTerm);
    return { signalAt, stopAt: ignoring ? now + grace * 1000 : signalAt };
  }

  async getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod | undefined> {
    signal?.throwIfAborted();
    const record = await this.read(mockPodKey(namespace, name));
    const now = this.clock.now();
    if (!record || !mockPodHeld(record, now)) return undefined;
    const pod = mockPodObject(record, now, this.hostIp(record.node));
    await this.probeEvents.record(record, pod, now);
    return pod;
  }

  async listPods(nodeName: string, signal?: AbortSignal): Promise<V1Pod[]> {
    signal?.throwIfAborted();
    const items = await this.table.query(mockNodeIndexPartition(nodeName), { index: 'gsi1' });
    const now = this.clock.now();
    const records = items.map(mockPodFromItem).filter((r) => mockPodHeld(r, now) && r.node === nodeName);
    const pods = records.map((r) => mockPodObject(r, now, this.hostIp(r.node)));
    await Promise.all(records.map((r, i) => this.probeEvents.record(r, pods[i], now)));
    return pods;
  }

  /**
   * What the container's command and args print (mock-logs.ts).
   * @throws ProviderNotFoundError when this uid does not run, the pod has no
   *   such container, or `previous` is asked (the mock keeps the log of the
   *   current instance only).
   */
  async containerLogs(
    pod: V1Pod,
    container: string,
    options: ContainerLogOptions,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    const state = podIdentity(pod);
    signal?.throwIfAborted();
    const record = await this.read(mockPodKey(state.namespace, state.name));
    if (!record || record.uid !== state.uid || !mockPodHeld(record, this.clock.now()))
      throw new ProviderNotFoundError(`mock provider has no pod ${describe(state)}`);
    if (!record.containers.some((c) => c.name === container))
      throw new ProviderNotFoundError(`mock pod ${describe(state)} has no container ${container}`);
    if (options.previous) {
      throw new ProviderNotFoundError(
        `previous terminated container "${container}" in pod "${state.name}" not found: the mock keeps the log of the current instance only`,
      );
    }
    return mockContainerLog({
      state: record,
      pod,
      container,
      options,
      clock: this.clock,
      ...(signal ? { signal } : {}),
    });
  }

  /** Steady, plausible figures for the running pods of `nodeName` (mock-stats.ts). */
  async podStats(nodeName: string, signal?: AbortSignal): Promise<PodUsage[]> {
    signal?.throwIfAborted();
    const items = await this.table.query(mockNodeIndexPartition(nodeName), { index: 'gsi1' });
    const now = this.clock.now();
    return items
      .map(mockPodFromItem)
      .filter((r) => mockPodHeld(r, now) && r.node === nodeName)
      .flatMap((r) => mockPodUsage(r, now) ?? []);
  }

  private async read(key: ItemKey): Promise<MockPodRecord | undefined> {
    const item = await this.table.get(key);
    return item ? mockPodFromItem(item) : undefined;
  }

  /** What getPod would report now for this record. */
  private status(record: MockPodRecord): AppliedPodStatus {
    return mockPodObject(record, this.clock.now(), this.hostIp(record.node)).status;
  }

  private hostIp(node: string): string {
    return this.options.hostIp ?? mockHostIp(node);
  }
}

function runs(uid: string): Expression {
  return {
    expression: 'attribute_exists(pk) AND #uid = :uid AND attribute_not_exists(#deletedAt)',
    names: { '#uid': 'uid', '#deletedAt': 'deletedAt' },
    values: { ':uid': uid },
  };
}

function versionIs(version: number): Expression {
  return { expression: '#version = :seen', names: { '#version': 'version' }, values: { ':seen': version } };
}

function notFound(
  pod: { namespace: string; name: string; uid: string },
  cause: unknown,
): ProviderNotFoundError {
  return new ProviderNotFoundError(`mock provider has no pod ${describe(pod)}`, { cause });
}

function describe(pod: { namespace: string; name: string; uid: string }): string {
  return `${pod.namespace}/${pod.name} (uid ${pod.uid})`;
}

/** The stored record of a pod, tombstones included: for tests that count provider calls. */
export async function mockPodRecord(
  table: StateTable,
  namespace: string,
  name: string,
): Promise<MockPodRecord | undefined> {
  const item = await table.get(mockPodKey(namespace, name));
  return item ? mockPodFromItem(item) : undefined;
}
