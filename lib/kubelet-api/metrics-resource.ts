import type { PodUsage } from '../provider/provider.ts';

/**
 * The kubelet's `/metrics/resource` (its resource metrics collector) in the
 * Prometheus text format 0.0.4, which metrics-server scrapes for `kubectl
 * top`: cumulative CPU seconds and working-set bytes of the node, each pod
 * and each container, the containers' start times, and `scrape_error`.
 * Samples carry the time they were taken (milliseconds), as the kubelet's do.
 */

export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

interface Sample {
  labels: Record<string, string>;
  value: number;
  at: number;
}

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: Sample[];
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function line(name: string, sample: Sample): string {
  const labels = Object.entries(sample.labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',');
  return `${name}${labels ? `{${labels}}` : ''} ${sample.value} ${sample.at}`;
}

function family(name: string, help: string, type: Family['type']): Family {
  return { name, help, type, samples: [] };
}

/**
 * The text for `pods` (undefined: the provider reports no usage, so only
 * `scrape_error 0` is there). Sample order follows the kubelet's: families
 * sorted by name.
 */
export function resourceMetrics(pods: readonly PodUsage[] | undefined, now: number): string {
  const f = {
    containerCpu: family(
      'container_cpu_usage_seconds_total',
      'Cumulative cpu time consumed by the container in core-seconds',
      'counter',
    ),
    containerMemory: family(
      'container_memory_working_set_bytes',
      'Current working set of the container in bytes',
      'gauge',
    ),
    containerStart: family(
      'container_start_time_seconds',
      'Start time of the container since unix epoch in seconds',
      'gauge',
    ),
    nodeCpu: family(
      'node_cpu_usage_seconds_total',
      'Cumulative cpu time consumed by the node in core-seconds',
      'counter',
    ),
    nodeMemory: family('node_memory_working_set_bytes', 'Current working set of the node in bytes', 'gauge'),
    podCpu: family(
      'pod_cpu_usage_seconds_total',
      'Cumulative cpu time consumed by the pod in core-seconds',
      'counter',
    ),
    podMemory: family('pod_memory_working_set_bytes', 'Current working set of the pod in bytes', 'gauge'),
    scrapeError: family(
      'scrape_error',
      '1 if there was an error while getting container metrics, 0 otherwise',
      'gauge',
    ),
  };
  let nodeCpu: number | undefined;
  let nodeMemory: number | undefined;
  for (const pod of pods ?? []) {
    const podLabels = { namespace: pod.namespace, pod: pod.name };
    let podCpu: number | undefined;
    let podMemory: number | undefined;
    let podAt = 0;
    for (const c of pod.containers) {
      const labels = { ...podLabels, container: c.name };
      const at = c.time.getTime();
      podAt = Math.max(podAt, at);
      const cpu = c.cpu?.usageCoreNanoSeconds;
      const memory = c.memory?.workingSetBytes;
      if (cpu !== undefined) {
        f.containerCpu.samples.push({ labels, value: cpu / 1e9, at });
        podCpu = (podCpu ?? 0) + cpu;
      }
      if (memory !== undefined) {
        f.containerMemory.samples.push({ labels, value: memory, at });
        podMemory = (podMemory ?? 0) + memory;
      }
      if (c.startTime) f.containerStart.samples.push({ labels, value: c.startTime.getTime() / 1000, at });
    }
    if (podCpu !== undefined) f.podCpu.samples.push({ labels: podLabels, value: podCpu / 1e9, at: podAt });
    if (podMemory !== undefined) f.podMemory.samples.push({ labels: podLabels, value: podMemory, at: podAt });
    if (podCpu !== undefined) nodeCpu = (nodeCpu ?? 0) + podCpu;
    if (podMemory !== undefined) nodeMemory = (nodeMemory ?? 0) + podMemory;
  }
  if (pods) {
    f.nodeCpu.samples.push({ labels: {}, value: (nodeCpu ?? 0) / 1e9, at: now });
    f.nodeMemory.samples.push({ labels: {}, value: nodeMemory ?? 0, at: now });
  }
  f.scrapeError.samples.push({ labels: {}, value: 0, at: now });
  return Object.values(f)
    .filter((fam) => fam.samples.length > 0)
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((fam) => {
      const lines = fam.samples.map((s) =>
        fam.name === 'scrape_error' ? `${fam.name} ${s.value}` : line(fam.name, s),
      );
      return [`# HELP ${fam.name} [ALPHA] ${fam.help}`, `# TYPE ${fam.name} ${fam.type}`, ...lines].join(
        '\n',
      );
    })
    .join('\n')
    .concat('\n');
}
