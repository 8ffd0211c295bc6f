import type { ContainerProbes } from '../../container-probes.ts';
import type { ProbeKind, ProbeWorkerState } from '../../probe-worker.ts';
import type { PodPlan } from '../pod-plan.ts';
import type { InstanceReport } from './prober-report.ts';

/** What the prober keeps of the pods and instances it looks after. */

/** The part of a pod's plan the prober reads. */
export type AgentPlan = Pick<
  PodPlan,
  'namespace' | 'name' | 'uid' | 'restartPolicy' | 'gracePeriodSeconds'
> & {
  containers: Array<{ name: string; probes?: ContainerProbes }>;
};

export interface Worker {
  kind: ProbeKind;
  state: ProbeWorkerState;
  nextAt: number;
  busy: boolean;
}

export interface Tracked {
  id: string;
  uid: string;
  container: string;
  startedAt: number;
  running: boolean;
  probes: ContainerProbes;
  workers: Worker[];
  report: InstanceReport;
  /** A kill or a deletion's stop is under way. */
  stopping: boolean;
}

export interface PodState {
  plan: AgentPlan;
  podIp?: string;
  deletingUntil?: number;
}
