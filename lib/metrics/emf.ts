/**
 * Metrics in CloudWatch Embedded Metric Format: one JSON line per data point
 * on stdout, which CloudWatch Logs turns into metrics with no agent, no API
 * call and no extra package. The line is also an ordinary log line, so Logs
 * Insights can query it (e.g. `filter LeaseRenewalLag > 15000`).
 *
 * Namespace `ServerlessVirtualKubelet` (SVK_METRICS_NAMESPACE); every metric
 * has the dimensions `Deployment` (SVK_DEPLOYMENT_NAME, `<service>-<stage>` in
 * serverless.yml) and `service` (SVK_SERVICE_NAME, `<service>`: the name
 * Powertools for AWS Lambda gives the dimension every metric of a service
 * carries), plus the dimensions listed in {@link METRICS}.
 */

/** The EMF units this module uses. */
export type MetricUnit = 'Milliseconds' | 'Count';

/** Every metric emitted, its unit and its extra dimensions (beside `Deployment` and `service`). */
export const METRICS = {
  /**
   * Per node and heartbeat tick: time since the lease's previous renewal
   * (the one before this tick's, whoever wrote it), or, when this tick's
   * renewal failed, time since the last renewal known. The node lifecycle
   * controller marks the node NotReady at 40 s.
   */
  LeaseRenewalLag: { unit: 'Milliseconds', dimensions: ['Node'] },
  /** Per pod-sync invocation: time to reconcile the pod, with outcome as a property. */
  PodSyncLatency: { unit: 'Milliseconds', dimensions: [] },
  /** A provider call failed (not counting "not found"), by operation (ping, createPod, ...). */
  ProviderErrors: { unit: 'Count', dimensions: ['Operation'] },
  /** Pod events accepted by the event bus (pod-watch). */
  EventsPublished: { unit: 'Count', dimensions: [] },
  /** Pod events received by pod-sync, valid or not. */
  EventsConsumed: { unit: 'Count', dimensions: [] },
  /** A lock was taken over from a holder that stopped renewing it (crashed or frozen), by lock family. */
  LockTakeovers: { unit: 'Count', dimensions: ['Lock'] },
  /**
   * Per heartbeat round in which the leases were renewed without the lock,
   * because the lock store (DynamoDB) could not be reached; the nodes
   * renewed as a property.
   */
  DegradedHeartbeats: { unit: 'Count', dimensions: [] },
  /**
   * The keeper started the tick chain again; property `Reason`: `lost` (the
   * queue held no message: also the first start after a deployment) or
   * `stale` (the nodes' leases went unrenewed for two renew intervals while
   * the queue held messages: a head that keeps failing).
   */
  TickChainRestarts: { unit: 'Count', dimensions: [] },
  /** Messages of the tick queue that were not tick messages, dropped (their message ids are logged). */
  TickMessagesRejected: { unit: 'Count', dimensions: [] },
  /**
   * Value 1 on the first invocation of an execution environment (a cold
   * start), by function (Powertools' ColdStart metric and `function_name`
   * dimension); nothing on a warm invocation, so Sum is the cold starts.
   */
  ColdStart: { unit: 'Count', dimensions: ['function_name'] },
} as const satisfies Record<string, { unit: MetricUnit; dimensions: readonly string[] }>;

export type MetricName = keyof typeof METRICS;

export const DEFAULT_METRICS_NAMESPACE = 'ServerlessVirtualKubelet';

/** The `service` dimension's value when none is given (serverless.yml's service). */
export const DEFAULT_SERVICE_NAME = 'serverless-virtual-kubelet';

/**
 * What the functions report. Implementations never throw and never block:
 * a metric that cannot be written is lost, the work goes on. Each data point
 * is written when reported, with its own timestamp, so there is nothing to
 * flush when an invocation ends.
 */
export interface Metrics {
  leaseRenewalLag(node: string, lagMs: number): void;
  podSyncLatency(durationMs: number, outcome: string): void;
  providerError(operation: string): void;
  eventsPublished(count: number): void;
  eventsConsumed(count: number): void;
  /** `lock` is the full lock name; only its family (before `#`) becomes a dimension. */
  lockTakeover(lock: string): void;
  /** A heartbeat round renewed `nodes` leases without the lock (the lock store unreachable). */
  degradedHeartbeat(nodes: number): void;
  tickChainRestarted(reason: TickChainRestartReason): void;
  tickMessagesRejected(count: number): void;
  /** This invocation of `functionName` is its execution environment's first. */
  coldStart(functionName: string): void;
}

/** Why the keeper started the tick chain again (lib/tick/tick-entry.ts). */
export type TickChainRestartReason = 'lost' | 'stale';

/** Metrics switched off (SVK_METRICS=off, tests, `npm start`). */
export const noMetrics: Metrics = {
  leaseRenewalLag: () => {},
  podSyncLatency: () => {},
  providerError: () => {},
  eventsPublished: () => {},
  eventsConsumed: () => {},
  lockTakeover: () => {},
  degradedHeartbeat: () => {},
  tickChainRestarted: () => {},
  tickMessagesRejected: () => {},
  coldStart: () => {},
};

export interface EmfMetricsOptions {
  namespace?: string;
  /** Value of the `Deployment` dimension. */
  deployment: string;
  /** Value of the `service` dimension; default {@link DEFAULT_SERVICE_NAME}. */
  service?: string;
  /**
   * Whether LeaseRenewalLag also gets a per-node metric (dimension set
   * Deployment+service+Node) beside the per-deployment one. Each node is then one
   * more custom metric, billed monthly; without it, Node stays a property
   * of the line, still queryable in Logs Insights.
   */
  perNode?: boolean;
  /** Wall-clock epoch ms for the line's Timestamp. */
  now?: () => number;
  /** Writes one line (without newline handling: the line ends with `\n`). Default: stdout. */
  write?: (line: string) => void;
}

/** One EMF document: the `_aws` metadata, dimension values, metric values and properties at the root. */
export interface EmfDocument {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: Array<{
      Namespace: string;
      Dimensions: string[][];
      Metrics: Array<{ Name: string; Unit: MetricUnit }>;
    }>;
  };
  [key: string]: unknown;
}

/**
 * Builds the EMF document for one data point. Pure, for tests and for
 * callers that write elsewhere.
 */
export function emfDocument(options: {
  namespace: string;
  timestamp: number;
  name: MetricName;
  value: number;
  /** Values of `Deployment`, `service` and the metric's own dimensions. */
  dimensions: Record<string, string>;
  /** Dimension sets; default: one set of every key of `dimensions`. */
  dimensionSets?: string[][];
  properties?: Record<string, string | number>;
}): EmfDocument {
  const { unit } = METRICS[options.name];
  return {
    _aws: {
      Timestamp: options.timestamp,
      CloudWatchMetrics: [
        {
          Namespace: options.namespace,
          Dimensions: options.dimensionSets ?? [Object.keys(options.dimensions)],
          Metrics: [{ Name: options.name, Unit: unit }],
        },
      ],
    },
    ...options.properties,
    ...options.dimensions,
    [options.name]: options.value,
  };
}

/** Metrics as EMF lines on stdout, read by CloudWatch Logs in Lambda. */
export class EmfMetrics implements Metrics {
  readonly #namespace: string;
  readonly #deployment: string;
  readonly #service: string;
  readonly #perNode: boolean;
  readonly #now: () => number;
  readonly #write: (line: string) => void;

  constructor(options: EmfMetricsOptions) {
    this.#namespace = options.namespace ?? DEFAULT_METRICS_NAMESPACE;
    this.#deployment = options.deployment;
    this.#service = options.service ?? DEFAULT_SERVICE_NAME;
    this.#perNode = options.perNode ?? true;
    this.#now = options.now ?? Date.now;
    this.#write = options.write ?? ((line) => process.stdout.write(line));
  }

  leaseRenewalLag(node: string, lagMs: number): void {
    if (this.#perNode) {
      this.#emit('LeaseRenewalLag', Math.round(lagMs), { Node: node }, [
        ['Deployment', 'service', 'Node'],
        ['Deployment', 'service'],
      ]);
    } else {
      this.#emit('LeaseRenewalLag', Math.round(lagMs), {}, undefined, { Node: node });
    }
  }

  podSyncLatency(durationMs: number, outcome: string): void {
    this.#emit('PodSyncLatency', Math.round(durationMs), {}, undefined, { Outcome: outcome });
  }

  providerError(operation: string): void {
    this.#emit('ProviderErrors', 1, { Operation: operation });
  }

  eventsPublished(count: number): void {
    if (count > 0) this.#emit('EventsPublished', count, {});
  }

  eventsConsumed(count: number): void {
    if (count > 0) this.#emit('EventsConsumed', count, {});
  }

  lockTakeover(lock: string): void {
    this.#emit('LockTakeovers', 1, { Lock: lock.split('#')[0] ?? lock }, undefined, { LockName: lock });
  }

  degradedHeartbeat(nodes: number): void {
    this.#emit('DegradedHeartbeats', 1, {}, undefined, { Nodes: nodes });
  }

  tickChainRestarted(reason: TickChainRestartReason): void {
    this.#emit('TickChainRestarts', 1, {}, undefined, { Reason: reason });
  }

  tickMessagesRejected(count: number): void {
    if (count > 0) this.#emit('TickMessagesRejected', count, {});
  }

  coldStart(functionName: string): void {
    this.#emit('ColdStart', 1, { function_name: functionName });
  }

  #emit(
    name: MetricName,
    value: number,
    dimensions: Record<string, string>,
    dimensionSets?: string[][],
    properties?: Record<string, string | number>,
  ): void {
    try {
      const doc = emfDocument({
        namespace: this.#namespace,
        timestamp: this.#now(),
        name,
        value,
        dimensions: { Deployment: this.#deployment, service: this.#service, ...dimensions },
        ...(dimensionSets ? { dimensionSets } : {}),
        ...(properties ? { properties } : {}),
      });
      this.#write(`${JSON.stringify(doc)}\n`);
    } catch {
      // A metric must never fail the work it measures.
    }
  }
}
