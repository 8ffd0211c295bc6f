import * as z from 'zod';
import { MINUTES_PER_MONTH, PRICES } from './prices.ts';

/**
 * The monthly cost of a deployment from measured usage rates
 * (bench/idle-cost.ts writes them to bench/figures/idle-cost.json), at the
 * list prices of prices.ts: what `npm run cost-model` prints for a number of
 * nodes and pods.
 */

const rates = z.strictObject({
  /** Lambda invocations per minute. */
  invocations: z.number().nonnegative(),
  /** Lambda GB-seconds billed per minute, at the deployed memory sizes. */
  gbSeconds: z.number().nonnegative(),
  /** DynamoDB write and read request units per minute. */
  dynamoWriteUnits: z.number().nonnegative(),
  dynamoReadUnits: z.number().nonnegative(),
  /** SQS requests per minute (the chain's sends, deletes and the event source mapping's receives). */
  sqsRequests: z.number().nonnegative(),
  /** EventBridge events per minute (pod events). */
  eventBridgeEvents: z.number().nonnegative(),
  /** Scheduled invocations per minute (schedules and the keeper). */
  scheduledInvocations: z.number().nonnegative(),
  /** Bytes written to CloudWatch Logs per minute (the functions' lines and Lambda's own). */
  logBytes: z.number().nonnegative(),
  /** Kubernetes API requests per minute: not priced (the cluster's), reported. */
  kubeRequests: z.number().nonnegative(),
});

export type UsageRates = z.infer<typeof rates>;

const cadenceFigures = z.strictObject({
  /** What a deployment costs per minute whatever its nodes. */
  base: rates,
  /** What each node adds per minute. */
  perNode: rates,
  /** Nodes one deployment can serve (Lambda's 4 KB of environment holds about 250 names). */
  maxNodesPerDeployment: z.number().int().positive(),
  /** Memory of the functions the figures were priced at, for the report. */
  memoryMb: z.record(z.string(), z.number().int().positive()),
});

const podFigures = z.strictObject({
  /** One pod's whole life (bound, Running, deleted, gone). */
  invocations: z.number().nonnegative(),
  gbSeconds: z.number().nonnegative(),
  dynamoWriteUnits: z.number().nonnegative(),
  dynamoReadUnits: z.number().nonnegative(),
  eventBridgeEvents: z.number().nonnegative(),
  logBytes: z.number().nonnegative(),
  kubeRequests: z.number().nonnegative(),
  /** Where these come from. */
  source: z.string(),
});

const fixedFigures = z.strictObject({
  /** Alarms of each cadence (infra/monitoring.yml), with `alarms: true`. */
  alarms: z.strictObject({ tick: z.number().int(), continuous: z.number().int() }),
  /** Custom metrics a deployment writes whatever its nodes, and per node (LeaseRenewalLag by Node). */
  customMetrics: z.number().int(),
  customMetricsPerNode: z.number().int(),
});

export const costFiguresSchema = z.strictObject({
  /** When and where the figures were measured. */
  measured: z.strictObject({ at: z.string(), machine: z.string(), command: z.string() }),
  cadences: z.strictObject({ tick: cadenceFigures, continuous: cadenceFigures }),
  pod: podFigures,
  fixed: fixedFigures,
});

export type CostFigures = z.infer<typeof costFiguresSchema>;
export type Cadence = keyof CostFigures['cadences'];

export interface CostQuestion {
  cadence: Cadence;
  nodes: number;
  /** Pods that live and die in a month (each pod's whole life counted once). */
  podsPerMonth: number;
  /** Fixed CloudWatch costs: alarms, the dashboard (beyond the account's three free), custom metrics. */
  alarms: boolean;
  dashboard: boolean;
  metrics: boolean;
  perNodeMetrics: boolean;
}

export interface CostLine {
  item: string;
  dollars: number;
}

export interface CostAnswer {
  deployments: number;
  /** What runs whatever the load (functions, queue, table, logs): by service. */
  idle: CostLine[];
  /** What the pods add. */
  pods: CostLine[];
  /** CloudWatch alarms, dashboard and custom metrics: listed apart, each switchable off. */
  fixed: CostLine[];
  total: number;
  /** Kubernetes API requests per month (the cluster's cost, not AWS's). */
  kubeRequestsPerMonth: number;
}

/** `deployments` deployments' base rates plus `nodes` nodes' rates. */
function scaled(cadence: CostFigures['cadences'][Cadence], deployments: number, nodes: number): UsageRates {
  const out = { ...cadence.base };
  for (const key of Object.keys(out) as Array<keyof UsageRates>) {
    out[key] = cadence.base[key] * deployments + cadence.perNode[key] * nodes;
  }
  return out;
}

function priced(r: Omit<UsageRates, 'kubeRequests'>, months: number): CostLine[] {
  const m = months;
  return [
    { item: 'Lambda requests', dollars: r.invocations * m * PRICES.lambdaRequest },
    { item: 'Lambda duration', dollars: r.gbSeconds * m * PRICES.lambdaGbSecond },
    { item: 'SQS', dollars: r.sqsRequests * m * PRICES.sqsFifoRequest },
    {
      item: 'DynamoDB',
      dollars:
        r.dynamoWriteUnits * m * PRICES.dynamoWriteUnit + r.dynamoReadUnits * m * PRICES.dynamoReadUnit,
    },
    {
      item: 'EventBridge',
      dollars: (r.eventBridgeEvents + r.scheduledInvocations) * m * PRICES.eventBridgeEvent,
    },
    { item: 'CloudWatch Logs', dollars: r.logBytes * m * PRICES.logIngestionByte },
  ];
}

const sum = (lines: CostLine[]) => lines.reduce((a, l) => a + l.dollars, 0);

/**
 * The monthly cost of `q.nodes` nodes in as many deployments as their names
 * need, with `q.podsPerMonth` pods, from `figures`.
 */
export function monthlyCost(figures: CostFigures, q: CostQuestion): CostAnswer {
  const cadence = figures.cadences[q.cadence];
  const deployments = Math.max(1, Math.ceil(q.nodes / cadence.maxNodesPerDeployment));
  const usage = scaled(cadence, deployments, q.nodes);
  const idle = priced(usage, MINUTES_PER_MONTH);
  const pod = figures.pod;
  const pods = priced(
    {
      invocations: pod.invocations,
      gbSeconds: pod.gbSeconds,
      dynamoWriteUnits: pod.dynamoWriteUnits,
      dynamoReadUnits: pod.dynamoReadUnits,
      eventBridgeEvents: pod.eventBridgeEvents,
      logBytes: pod.logBytes,
      sqsRequests: 0,
      scheduledInvocations: 0,
    },
    q.podsPerMonth,
  ).filter((l) => l.dollars > 0);
  const fixed: CostLine[] = [];
  if (q.alarms) {
    fixed.push({
      item: `alarms (${figures.fixed.alarms[q.cadence]} per deployment)`,
      dollars: figures.fixed.alarms[q.cadence] * deployments * PRICES.alarmMonth,
    });
  }
  if (q.dashboard) {
    fixed.push({ item: 'dashboard (beyond three free)', dollars: deployments * PRICES.dashboardMonth });
  }
  if (q.metrics) {
    fixed.push({
      item: 'custom metrics',
      dollars: figures.fixed.customMetrics * deployments * PRICES.customMetricMonth,
    });
    if (q.perNodeMetrics) {
      fixed.push({
        item: 'per-node lease lag metric',
        dollars: figures.fixed.customMetricsPerNode * q.nodes * PRICES.customMetricMonth,
      });
    }
  }
  return {
    deployments,
    idle,
    pods,
    fixed,
    total: sum(idle) + sum(pods) + sum(fixed),
    kubeRequestsPerMonth: usage.kubeRequests * MINUTES_PER_MONTH + pod.kubeRequests * q.podsPerMonth,
  };
}

/** The idle cost of the functions alone (no pods, no fixed CloudWatch costs). */
export function idleCost(figures: CostFigures, cadence: Cadence, nodes: number): number {
  return sum(
    monthlyCost(figures, {
      cadence,
      nodes,
      podsPerMonth: 0,
      alarms: false,
      dashboard: false,
      metrics: false,
      perNodeMetrics: false,
    }).idle,
  );
}

/** Parses a figures file. @throws Error naming each bad field. */
export function parseCostFigures(json: unknown): CostFigures {
  const parsed = costFiguresSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  throw new Error(
    `cost figures: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'file'}: ${i.message}`).join('; ')}`,
  );
}
