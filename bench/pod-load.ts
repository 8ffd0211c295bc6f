/**
 * The pod benchmark's load generator, run in a worker thread of bench/pods.ts
 * so that its CPU (creating pods, watching them, polling for their deletion)
 * is measured apart from the deployment's: the worker reports its own thread's
 * CPU time, and the benchmark subtracts it from the process's.
 *
 * Commands arrive as messages ({@link LoadCommand}); each is answered with one
 * {@link LoadReply} carrying its result, the worker's CPU so far and the
 * Kubernetes requests the worker sent by kind (for the cross-check with
 * kube-apiserver's counters). Bursts also send progress messages.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import type { V1Pod } from '@kubernetes/client-node';
import { apiStatusCode, isNotFound } from '../lib/kube/client.ts';
import { createToolingClients, type ToolingClients } from '../lib/kube/tooling-clients.ts';
import { terminatedStatus } from '../lib/pod/status/pod-status-builders.ts';
import { mockNodeIndexPartition } from '../lib/provider/mock/mock-pod-record.ts';
import { StateTable } from '../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { benchLog, bump, kubeRequestKind, resumingWatch } from './support.ts';

/** What the worker needs to reach the cluster and the table. */
export interface LoadWorkerData {
  adminKubeconfig: string;
  dynamoEndpoint: string;
  tableName: string;
  /** The virtual node the burst's pods are bound to. */
  node: string;
}

export type LoadCommand =
  | { id: number; cmd: 'burst'; namespace: string; n: number; concurrency: number; capMs: number }
  | { id: number; cmd: 'delete'; namespace: string; n: number; capMs: number }
  | { id: number; cmd: 'baseline'; n: number; concurrency: number }
  /** The baseline's pods deleted as a kubelet at its quickest would: see LoadGenerator.baselineDelete. */
  | { id: number; cmd: 'baseline-delete'; namespace: string; n: number; concurrency: number }
  /** Answers at once: the reply carries the CPU and request figures. */
  | { id: number; cmd: 'cpu' }
  | { id: number; cmd: 'stop' };

export interface BurstLoad {
  /** Epoch ms when each pod's create call returned (bound), and when a watch first saw it Running. */
  boundAt: Record<string, number>;
  runningAt: Record<string, number>;
  failures: number;
  startedAt: number;
  createdAt: number;
  allRunning: boolean;
}

export interface DeletionLoad {
  /** Seconds from the namespace delete to no provider pod / no known-pod record / namespace gone. */
  providerEmptyS?: number;
  knownEmptyS?: number;
  namespaceGoneS?: number;
  providerLeft: number;
  knownLeft: number;
}

export interface BaselineLoad {
  pods: number;
  seconds: number;
  failures: number;
  /** The namespace the baseline's pods are left in, for baseline-delete. */
  namespace: string;
}

export interface BaselineDeletion {
  pods: number;
  /** From the namespace delete until the namespace is gone. */
  seconds: number;
  failures: number;
}

export type LoadReply =
  | {
      id: number;
      result: BurstLoad | DeletionLoad | BaselineLoad | BaselineDeletion | undefined;
      /** This thread's CPU seconds so far. */
      cpuSeconds: number;
      /** Kubernetes requests this thread sent so far, by `VERB resource`. */
      kube: Record<string, number>;
    }
  | { id: number; error: string; cpuSeconds: number; kube: Record<string, number> }
  | { progress: { namespace: string; bound: number; running: number } };

const log = benchLog('bench pods load');
const PROGRESS_MS = 1_000;

function isRequestMessage(message: unknown): message is { request: ClientRequest } {
  return typeof message === 'object' && message !== null && 'request' in message;
}

/** The worker's own Kubernetes requests, by kind (this thread's diagnostics channel only). */
const kubeCounts = new Map<string, number>();
subscribe('http.client.request.start', (message) => {
  if (!isRequestMessage(message)) return;
  const kind = kubeRequestKind(message.request.method, message.request.path);
  if (kind !== undefined) bump(kubeCounts, kind);
});

function cpuSeconds(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1e6;
}

export function podBody(name: string, node: string): V1Pod {
  return {
    metadata: { name },
    spec: {
      nodeName: node,
      tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [{ name: 'app', image: 'registry.example/app:1' }],
    },
  };
}

/** Retries what may pass on a second try (5xx, 429, no answer); a 409 after a first try means it went through. */
async function withRetries<T>(call: () => Promise<T>, alreadyDone: () => T | Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const code = apiStatusCode(err);
      if (code === 409 && attempt > 1) return await alreadyDone();
      if (attempt >= 5 || (code !== undefined && code < 500 && code !== 429)) throw err;
      await delay(500 * attempt);
    }
  }
}

/** Runs `work` on every index from 0 to n - 1 with `concurrency` in flight; counts the failures (logged). */
async function forEachLimited(
  n: number,
  concurrency: number,
  work: (i: number) => Promise<void>,
): Promise<number> {
  let failures = 0;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      try {
        await work(i);
      } catch (err) {
        failures++;
        log(`item ${i} failed: ${String(err)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return failures;
}

async function waitUntil(
  what: string,
  probe: () => Promise<boolean> | boolean,
  options: { timeoutMs: number; intervalMs: number },
): Promise<boolean> {
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (performance.now() > deadline) {
      log(`gave up waiting for ${what} after ${(options.timeoutMs / 1000).toFixed(0)} s`);
      return false;
    }
    await delay(options.intervalMs);
  }
}

async function namespaceGone(admin: ToolingClients, namespace: string): Promise<boolean> {
  try {
    await admin.core.readNamespace({ name: namespace });
    return false;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}

export async function createNamespace(admin: ToolingClients, name: string): Promise<void> {
  await admin.core.createNamespace({ body: { metadata: { name } } });
  // 1.20's ServiceAccount admission refuses pods until the default account has its token.
  await waitUntil(
    `the default service account of ${name}`,
    async () => {
      try {
        const sa = await admin.core.readNamespacedServiceAccount({ name: 'default', namespace: name });
        return (sa.secrets?.length ?? 0) > 0;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        return false;
      }
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

class LoadGenerator {
  private readonly admin: ToolingClients;
  private readonly table: StateTable;

  constructor(private readonly data: LoadWorkerData) {
    // The load's own requests wait their turn under load; a 5 s bound would fail creates that succeed.
    this.admin = createToolingClients(data.adminKubeconfig, {
      requestTimeoutMs: 120_000,
    });
    const { doc } = createDynamoDbClient({ endpoint: data.dynamoEndpoint, region: 'local' });
    this.table = new StateTable(doc, data.tableName);
  }

  /** The Node object of the baseline's pods, which nobody serves. */
  private get baselineNode(): string {
    return `${this.data.node}-baseline`;
  }

  /** Creates the namespace and `n` pods bound to the node, and waits until a watch saw each Running. */
  async burst(command: Extract<LoadCommand, { cmd: 'burst' }>): Promise<BurstLoad> {
    const { namespace, n, concurrency, capMs } = command;
    await createNamespace(this.admin, namespace);
    const names = Array.from({ length: n }, (_, i) => `p-${String(i).padStart(5, '0')}`);
    const boundAt: Record<string, number> = {};
    const runningAt: Record<string, number> = {};
    const wanted = new Set(names);
    let bound = 0;
    let running = 0;
    const watch = await resumingWatch(
      this.admin.config,
      `/api/v1/namespaces/${namespace}/pods`,
      {},
      (type, object) => {
        const pod = object as V1Pod;
        const name = pod.metadata?.name ?? '';
        if (!wanted.has(name) || type === 'DELETED' || runningAt[name] !== undefined) return;
        if (pod.status?.phase === 'Running') {
          runningAt[name] = Date.now();
          running++;
        }
      },
      log,
    );
    const progress = setInterval(
      () => parentPort?.postMessage({ progress: { namespace, bound, running } } satisfies LoadReply),
      PROGRESS_MS,
    );
    try {
      const startedAt = Date.now();
      const failures = await forEachLimited(n, concurrency, async (i) => {
        const name = names[i] ?? '';
        try {
          await withRetries(
            () => this.admin.core.createNamespacedPod({ namespace, body: podBody(name, this.data.node) }),
            () => undefined,
          );
          boundAt[name] = Date.now();
          bound++;
        } catch (err) {
          wanted.delete(name);
          throw err;
        }
      });
      const createdAt = Date.now();
      log(`${n}: ${bound} pods created in ${((createdAt - startedAt) / 1000).toFixed(1)} s`);
      const allRunning = await waitUntil('every pod Running', () => running >= bound, {
        timeoutMs: Math.max(0, startedAt + capMs - Date.now()),
        intervalMs: 100,
      });
      return { boundAt, runningAt, failures, startedAt, createdAt, allRunning };
    } finally {
      clearInterval(progress);
      watch.stop();
    }
  }

  /** Deletes the namespace and waits until the provider, the known-pod records and the API server have none of it. */
  async deleteNamespace(command: Extract<LoadCommand, { cmd: 'delete' }>): Promise<DeletionLoad> {
    const { namespace, capMs } = command;
    const started = performance.now();
    await this.admin.core.deleteNamespace({ name: namespace });
    const since = () => (performance.now() - started) / 1000;
    const result: DeletionLoad = { providerLeft: Number.NaN, knownLeft: Number.NaN };
    let lastLog = performance.now();
    const count = async () => {
      result.providerLeft = (await this.left('provider', namespace)).length;
      result.knownLeft = (await this.left('known', namespace)).length;
    };
    await waitUntil(
      `${namespace} to be gone`,
      async () => {
        // One item is enough to tell "not yet": the poll costs DynamoDB Local next to nothing.
        if (result.providerEmptyS === undefined && (await this.left('provider', namespace, 1)).length === 0)
          result.providerEmptyS = since();
        if (result.knownEmptyS === undefined && (await this.left('known', namespace, 1)).length === 0)
          result.knownEmptyS = since();
        if (result.namespaceGoneS === undefined && (await namespaceGone(this.admin, namespace)))
          result.namespaceGoneS = since();
        if (performance.now() - lastLog > 15_000) {
          lastLog = performance.now();
          await count();
          log(
            `deleting ${namespace}: ${result.providerLeft} in provider, ${result.knownLeft} known pods left`,
          );
        }
        return (
          result.providerEmptyS !== undefined &&
          result.knownEmptyS !== undefined &&
          result.namespaceGoneS !== undefined
        );
      },
      { timeoutMs: capMs, intervalMs: 500 },
    );
    await count();
    return result;
  }

  /**
   * The namespace's pods the provider still holds (the mock's node index,
   * where a deleted pod's record leaves once it stopped), or its known-pod
   * records, up to `limit`.
   */
  private left(what: 'provider' | 'known', namespace: string, limit?: number): Promise<unknown[]> {
    const sk = { op: 'begins_with', value: `${namespace}/` } as const;
    return what === 'provider'
      ? this.table.query(mockNodeIndexPartition(this.data.node), {
          index: 'gsi1',
          sk,
          ...(limit ? { limit } : {}),
        })
      : this.table.query(`pods#${this.data.node}`, { sk, ...(limit ? { limit } : {}) });
  }

  /**
   * kwok's work on this box: create `n` pods bound to a node nobody serves and
   * write each one's status Running once (one create and one status write per
   * pod, nothing persisted elsewhere), `concurrency` pods in flight. Runs
   * before the deployment starts, against a Node object of its own (so the pod
   * garbage collector leaves the pods alone), and removes everything afterwards.
   */
  async baseline(command: Extract<LoadCommand, { cmd: 'baseline' }>): Promise<BaselineLoad> {
    const { n, concurrency } = command;
    const admin = this.admin;
    const node = this.baselineNode;
    const namespace = `baseline-${n}-${Date.now().toString(36)}`;
    await admin.core.createNode({ body: { metadata: { name: node } } });
    await createNamespace(admin, namespace);
    const started = performance.now();
    const failures = await forEachLimited(n, concurrency, async (i) => {
      const name = `b-${String(i).padStart(5, '0')}`;
      const pod = await withRetries(
        () => admin.core.createNamespacedPod({ namespace, body: podBody(name, node) }),
        () => admin.core.readNamespacedPod({ namespace, name }),
      );
      const now = new Date();
      await withRetries(
        () =>
          admin.core.replaceNamespacedPodStatus({
            namespace,
            name,
            body: {
              ...pod,
              status: {
                ...pod.status,
                phase: 'Running',
                podIP: '10.0.0.2',
                startTime: now,
                conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
              },
            },
          }),
        () => pod,
      );
    });
    const seconds = (performance.now() - started) / 1000;
    log(`baseline: ${n - failures} pods created and Running in ${seconds.toFixed(1)} s`);
    return { pods: n, seconds, failures, namespace };
  }

  /**
   * The least this box needs to delete the baseline's pods as the bursts'
   * are deleted: the namespace deleted (its controller deletes each pod
   * gracefully), and a kubelet at its quickest, seeing each pod terminating
   * on a watch, writing its terminated status once and deleting it with
   * grace 0 (the uid as precondition), `concurrency` pods in flight. No
   * provider, no records, no Events. Until the namespace is gone; then the
   * baseline's node goes too.
   */
  async baselineDelete(command: Extract<LoadCommand, { cmd: 'baseline-delete' }>): Promise<BaselineDeletion> {
    const { namespace, n, concurrency } = command;
    const admin = this.admin;
    const queue: V1Pod[] = [];
    const handled = new Set<string>();
    const waiting: (() => void)[] = [];
    const wakeAll = () => {
      for (const wake of waiting.splice(0)) wake();
    };
    const watch = await resumingWatch(
      admin.config,
      `/api/v1/namespaces/${namespace}/pods`,
      {},
      (type, object) => {
        const pod = object as V1Pod;
        const uid = pod.metadata?.uid ?? '';
        if (type === 'DELETED' || !pod.metadata?.deletionTimestamp || handled.has(uid)) return;
        handled.add(uid);
        queue.push(pod);
        wakeAll();
      },
      log,
    );
    const started = performance.now();
    let failures = 0;
    let gone = false;
    const worker = async () => {
      while (!gone) {
        const pod = queue.shift();
        if (!pod) {
          await new Promise<void>((resolve) => waiting.push(resolve));
          continue;
        }
        const name = pod.metadata?.name ?? '';
        try {
          await admin.core.replaceNamespacedPodStatus({
            namespace,
            name,
            body: { ...pod, status: terminatedStatus(pod.status, Date.now()) },
          });
          await admin.core.deleteNamespacedPod({
            namespace,
            name,
            body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid ?? '' } },
          });
        } catch (err) {
          if (isNotFound(err)) continue;
          failures++;
          log(`baseline delete of ${name} failed: ${String(err)}`);
        }
      }
    };
    const workers = Array.from({ length: concurrency }, worker);
    await admin.core.deleteNamespace({ name: namespace });
    await waitUntil(`${namespace} to be gone`, () => namespaceGone(admin, namespace), {
      timeoutMs: 10 * 60_000,
      intervalMs: 250,
    });
    const seconds = (performance.now() - started) / 1000;
    gone = true;
    wakeAll();
    watch.stop();
    await Promise.all(workers);
    log(`baseline: ${n} pods deleted, namespace gone after ${seconds.toFixed(1)} s`);
    await admin.core.deleteNode({ name: this.baselineNode });
    return { pods: n, seconds, failures };
  }
}

function isLoadWorkerData(value: unknown): value is LoadWorkerData {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.adminKubeconfig === 'string' &&
    typeof v.dynamoEndpoint === 'string' &&
    typeof v.tableName === 'string' &&
    typeof v.node === 'string'
  );
}

if (parentPort && isLoadWorkerData(workerData)) {
  const port = parentPort;
  const load = new LoadGenerator(workerData);
  port.on('message', (command: LoadCommand) => {
    if (command.cmd === 'stop') {
      port.close();
      return;
    }
    const run =
      command.cmd === 'burst'
        ? load.burst(command)
        : command.cmd === 'delete'
          ? load.deleteNamespace(command)
          : command.cmd === 'baseline'
            ? load.baseline(command)
            : command.cmd === 'baseline-delete'
              ? load.baselineDelete(command)
              : Promise.resolve(undefined);
    run.then(
      (result) =>
        port.postMessage({
          id: command.id,
          result,
          cpuSeconds: cpuSeconds(),
          kube: Object.fromEntries(kubeCounts),
        } satisfies LoadReply),
      (err: unknown) =>
        port.postMessage({
          id: command.id,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
          cpuSeconds: cpuSeconds(),
          kube: Object.fromEntries(kubeCounts),
        } satisfies LoadReply),
    );
  });
}
