import { type ProbeStatus, probeStatus } from '../../probe-worker.ts';
import type { ContainerPlan } from '../pod-plan.ts';
import type { ProberReport } from './prober-report.ts';

/** What the prober's report says of a running instance, as its container status shows it. */
export interface InstanceProbing extends ProbeStatus {
  /** Its postStart hook has not returned: the container is not reported Running yet. */
  postStartPending: boolean;
}

/**
 * A running instance's `started` and `ready` from the prober's report
 * (probeStatus: a probe the report has no result of yet counts as not
 * passed), and whether its postStart hook still runs. An instance of a
 * container without probes or hooks is started and ready.
 */
export function instanceProbing(
  container: ContainerPlan,
  instanceId: string,
  report: ProberReport | undefined,
): InstanceProbing {
  const probes = container.probes;
  if (!probes) return { postStartPending: false, started: true, ready: true };
  const reported = report?.instances[instanceId];
  const postStartPending = probes.postStart !== undefined && reported?.postStart?.state !== 'done';
  if (postStartPending) return { postStartPending, started: false, ready: false };
  return {
    postStartPending,
    ...probeStatus(true, {
      ...(probes.startup ? { startup: reported?.probes.startup ?? 'pending' } : {}),
      ...(probes.readiness ? { readiness: reported?.probes.readiness ?? 'pending' } : {}),
    }),
  };
}
