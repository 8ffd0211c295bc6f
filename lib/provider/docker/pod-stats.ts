import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import type { ContainerUsage, PodUsage } from '../provider.ts';
import type { EngineState } from './engine-state.ts';
import { LABELS } from './names.ts';
import type { Instance } from './observed-pod.ts';

/** Containers sampled at once. */
const PARALLEL = 8;

/** The last CPU sample of each container, for usageNanoCores: the engine's one-shot stats carry no previous sample. */
export type CpuSamples = Map<string, { at: number; total: number }>;

/**
 * Usage of the running containers of every pod on `nodeName`, one engine
 * stats sample each (`one-shot`: no second sample the engine would wait a
 * second for). CPU time is cumulative; the average rate (usageNanoCores)
 * needs a previous sample of the same container in this process, and is
 * left out until there is one. Working set is usage less inactive file
 * pages, as cAdvisor computes it.
 */
export async function podStats(
  deps: { docker: Docker; state: EngineState; clock: Clock; cpu: CpuSamples },
  nodeName: string,
  signal?: AbortSignal,
): Promise<PodUsage[]> {
  const pods = [...(await deps.state.pods({ [LABELS.node]: nodeName }, signal)).values()].filter(
    (p) => !p.deleting,
  );
  const running = pods.flatMap((p) =>
    p.instances.filter((i) => i.state === 'running').map((i) => ({ pod: p, instance: i })),
  );
  const samples = await mapSettledLimit(running, PARALLEL, ({ instance }) => sample(deps, instance, signal));
  const byUid = new Map<string, ContainerUsage[]>();
  samples.forEach((s, i) => {
    const uid = running[i]?.pod.uid;
    if (s.status !== 'fulfilled' || !s.value || !uid) return;
    byUid.set(uid, [...(byUid.get(uid) ?? []), s.value]);
  });
  return pods.flatMap((p) => {
    const containers = byUid.get(p.uid);
    if (!containers) return [];
    return [
      {
        namespace: p.namespace,
        name: p.name,
        uid: p.uid,
        ...(p.infra ? { startTime: new Date(p.infra.createdAt) } : {}),
        containers,
      },
    ];
  });
}

async function sample(
  deps: { docker: Docker; clock: Clock; cpu: CpuSamples },
  instance: Instance,
  signal?: AbortSignal,
): Promise<ContainerUsage | undefined> {
  const stats: Docker.ContainerStats = await deps.docker
    .getContainer(instance.id)
    .stats({ stream: false, 'one-shot': true, ...(signal ? { abortSignal: signal } : {}) });
  const read = Date.parse(stats.read);
  const time = Number.isFinite(read) && read > 0 ? read : deps.clock.now();
  const total = stats.cpu_stats?.cpu_usage?.total_usage;
  const before = deps.cpu.get(instance.id);
  let usageNanoCores: number | undefined;
  if (typeof total === 'number') {
    if (before && time > before.at && total >= before.total)
      usageNanoCores = Math.round(((total - before.total) / ((time - before.at) * 1e6)) * 1e9);
    deps.cpu.set(instance.id, { at: time, total });
    if (deps.cpu.size > 10_000) deps.cpu.delete(deps.cpu.keys().next().value ?? '');
  }
  const memory = stats.memory_stats;
  const usage = memory?.usage;
  const details: Record<string, number | undefined> = memory?.stats ?? {};
  const inactive = details.total_inactive_file ?? details.inactive_file ?? 0;
  const rss = details.total_rss ?? details.rss ?? details.anon;
  return {
    name: instance.container ?? '',
    ...(instance.startedAt !== undefined ? { startTime: new Date(instance.startedAt) } : {}),
    time: new Date(time),
    ...(typeof total === 'number'
      ? { cpu: { usageCoreNanoSeconds: total, ...(usageNanoCores !== undefined ? { usageNanoCores } : {}) } }
      : {}),
    ...(typeof usage === 'number'
      ? {
          memory: {
            usageBytes: usage,
            workingSetBytes: Math.max(0, usage - inactive),
            ...(typeof rss === 'number' ? { rssBytes: rss } : {}),
          },
        }
      : {}),
  };
}
