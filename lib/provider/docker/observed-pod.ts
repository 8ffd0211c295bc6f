import type { PodIdentity, Role } from './names.ts';
import type { PodPlan } from './pod-plan.ts';

/**
 * A pod as the engine holds it, read from its containers' labels and state:
 * what every decision and every status is computed from. Times are epoch
 * milliseconds.
 */

/** One container on the engine (infra, an init or app instance, or the deletion marker). */
export interface Instance {
  id: string;
  role: Role;
  /** Kubernetes container name (init and app). */
  container?: string;
  /** Instance number of the container: its restartCount. */
  attempt: number;
  state: 'created' | 'running' | 'exited';
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  exitCode?: number;
  oomKilled?: boolean;
  /** Why the engine could not start it (a command not found...). */
  startError?: string;
  /** The image the instance runs, as the engine names it (`sha256:...`). */
  imageId?: string;
}

/** The infra container, with what only its inspection tells. */
export interface InfraInstance extends Instance {
  role: 'infra';
  /** Undefined when its environment holds no readable plan (not one of ours, or damaged). */
  plan?: PodPlan;
  /** The pod IP, while the infra container runs. */
  ip?: string;
}

export interface ObservedPod extends PodIdentity {
  infra?: InfraInstance;
  /** Set while the pod is being deleted: the end of its grace period. */
  deleting?: { deadline: number };
  /** Init and app container instances, every attempt still on the engine. */
  instances: Instance[];
  /**
   * Set when a container of the pod stayed listed yet not found by its inspection (a create under way that
   * the engine took long to register): what the pod holds is not known, so nothing is removed for what it lacks.
   */
  unsettled?: boolean;
}

/** The instances of one container, newest first. */
export function instancesOf(pod: ObservedPod, role: 'init' | 'app', container: string): Instance[] {
  return pod.instances
    .filter((i) => i.role === role && i.container === container)
    .sort((a, b) => b.attempt - a.attempt);
}
