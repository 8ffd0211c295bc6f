import type { ContainerUsage, PodUsage } from '../provider/provider.ts';
import { metaTime } from './responses.ts';

/**
 * The kubelet's `/stats/summary` (k8s.io/kubelet/pkg/apis/stats/v1alpha1
 * Summary) for one virtual node, cpu and memory only: the node's figures are
 * the sums of its pods', each pod's the sums of its containers'. A figure no
 * container reports is left out, never reported as zero.
 */

/**
 * CPU (`usageNanoCores`, `usageCoreNanoSeconds`) or memory (`usageBytes`,
 * `workingSetBytes`, `rssBytes`) figures sampled at `time`.
 */
export interface UsageStats {
  time: string;
  [figure: string]: number | string;
}

export interface ContainerStats {
  name: string;
  startTime: string;
  cpu?: UsageStats;
  memory?: UsageStats;
}

export interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerStats[];
  cpu?: UsageStats;
  memory?: UsageStats;
}

export interface Summary {
  node: { nodeName: string; startTime: string; cpu?: UsageStats; memory?: UsageStats };
  pods: PodStats[];
}

type Figures = { time: number; values: Record<string, number> };

/** Sums the figures present; undefined when no part reports any. */
function sum(parts: ReadonlyArray<Figures | undefined>): Figures | undefined {
  const present = parts.filter((p): p is Figures => p !== undefined);
  if (present.length === 0) return undefined;
  const values: Record<string, number> = {};
  for (const part of present)
    for (const [k, v] of Object.entries(part.values)) values[k] = (values[k] ?? 0) + v;
  return { time: Math.max(...present.map((p) => p.time)), values };
}

function figures(time: Date, values: Record<string, number | undefined> | undefined): Figures | undefined {
  if (!values) return undefined;
  const defined = Object.fromEntries(
    Object.entries(values).filter((e): e is [string, number] => typeof e[1] === 'number'),
  );
  return Object.keys(defined).length > 0 ? { time: time.getTime(), values: defined } : undefined;
}

function render(f: Figures | undefined): UsageStats | undefined {
  return f ? { time: metaTime(f.time), ...f.values } : undefined;
}

interface Totals {
  cpu?: Figures;
  memory?: Figures;
}

function containerTotals(c: ContainerUsage): Totals {
  const cpu = figures(c.time, c.cpu);
  const memory = figures(c.time, c.memory);
  return { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) };
}

function withFigures<T extends object>(
  base: T,
  totals: Totals,
): T & { cpu?: UsageStats; memory?: UsageStats } {
  const cpu = render(totals.cpu);
  const memory = render(totals.memory);
  return { ...base, ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) };
}

/**
 * The summary of `node`, whose pods' usage is `pods` (undefined when the
 * provider reports no usage at all: the node then has no cpu and memory).
 */
export function statsSummary(
  node: string,
  nodeStartTime: Date,
  pods: readonly PodUsage[] | undefined,
  now: number,
): Summary {
  const podTotals: Totals[] = [];
  const podStats = (pods ?? []).map((pod) => {
    const containers = pod.containers.map((c) => ({ c, totals: containerTotals(c) }));
    const totals = {
      cpu: sum(containers.map((x) => x.totals.cpu)),
      memory: sum(containers.map((x) => x.totals.memory)),
    };
    podTotals.push(totals);
    const startTime = pod.startTime ?? pod.containers[0]?.startTime ?? nodeStartTime;
    return withFigures(
      {
        podRef: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
        startTime: metaTime(startTime),
        containers: containers.map(({ c, totals: t }) =>
          withFigures({ name: c.name, startTime: metaTime(c.startTime ?? startTime) }, t),
        ),
      },
      totals,
    );
  });
  const nodeTotals: Totals = pods
    ? {
        cpu: sum(podTotals.map((t) => t.cpu)) ?? zero('usageCoreNanoSeconds', 'usageNanoCores'),
        memory: sum(podTotals.map((t) => t.memory)) ?? zero('workingSetBytes', 'usageBytes'),
      }
    : {};
  return {
    node: withFigures({ nodeName: node, startTime: metaTime(nodeStartTime) }, nodeTotals),
    pods: podStats,
  };

  // A node whose provider reports usage but runs no pod uses nothing.
  function zero(...keys: string[]): Figures {
    return { time: now, values: Object.fromEntries(keys.map((k) => [k, 0])) };
  }
}
