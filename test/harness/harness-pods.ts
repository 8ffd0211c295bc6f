import type {
  AppsV1Api,
  BatchV1Api,
  V1Container,
  V1Deployment,
  V1Job,
  V1Pod,
  V1PodSpec,
} from '@kubernetes/client-node';
import { isNotFound } from '../../lib/kube/client.ts';
import type { ToolingClients } from '../../lib/kube/tooling-clients.ts';
import { waitFor } from '../support/kube.ts';

/** How long to wait, and what for (named in the timeout error). */
export interface Deadline {
  timeoutMs: number;
  what?: string;
}

/** A container of the provider's image running `sh -c <script>`. */
export function shell(
  name: string,
  script: string,
  extra: Partial<V1Container> = {},
): Omit<V1Container, 'image'> {
  return { name, command: ['sh', '-c', script], ...extra };
}

/**
 * Pods, Jobs and Deployments on the harness's virtual node, read back and
 * waited for against the API server. Every container gets the provider's
 * image unless it names one; every pod selects the node and tolerates its
 * provider taint.
 */
export class HarnessPods {
  constructor(
    private readonly admin: ToolingClients,
    private readonly batch: BatchV1Api,
    private readonly apps: AppsV1Api,
    private readonly node: string,
    private readonly image: string,
  ) {}

  /** A pod spec scheduled onto the node (through the scheduler), containers in the provider's image unless they name one. */
  spec(
    spec: Partial<Omit<V1PodSpec, 'containers'>> & {
      containers: Array<Omit<V1Container, 'image'> & { image?: string }>;
    },
  ): V1PodSpec {
    const withImage = (c: Omit<V1Container, 'image'> & { image?: string }): V1Container => ({
      image: this.image,
      ...c,
    });
    return {
      nodeSelector: { 'kubernetes.io/hostname': this.node },
      tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
      automountServiceAccountToken: false,
      ...spec,
      containers: spec.containers.map(withImage),
      ...(spec.initContainers ? { initContainers: spec.initContainers.map(withImage) } : {}),
    };
  }

  create(namespace: string, pod: V1Pod): Promise<V1Pod> {
    return this.admin.core.createNamespacedPod({ namespace, body: pod });
  }

  createJob(namespace: string, job: V1Job): Promise<V1Job> {
    return this.batch.createNamespacedJob({ namespace, body: job });
  }

  createDeployment(namespace: string, deployment: V1Deployment): Promise<V1Deployment> {
    return this.apps.createNamespacedDeployment({ namespace, body: deployment });
  }

  async read(namespace: string, name: string): Promise<V1Pod | undefined> {
    try {
      return await this.admin.core.readNamespacedPod({ namespace, name });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list(namespace: string): Promise<V1Pod[]> {
    return (await this.admin.core.listNamespacedPod({ namespace })).items;
  }

  /** Deletes a pod, with its own grace period unless `gracePeriodSeconds` is given. */
  async delete(namespace: string, name: string, gracePeriodSeconds?: number): Promise<void> {
    await this.admin.core.deleteNamespacedPod({
      namespace,
      name,
      ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
    });
  }

  /** Waits until the pod exists and `accept` holds for it; resolves with the pod. */
  waitFor(
    namespace: string,
    name: string,
    accept: (pod: V1Pod) => boolean,
    deadline: Deadline,
  ): Promise<V1Pod> {
    return waitFor(
      async () => {
        const pod = await this.read(namespace, name);
        return pod && accept(pod) ? pod : undefined;
      },
      { timeoutMs: deadline.timeoutMs, intervalMs: 500, what: deadline.what ?? `pod ${namespace}/${name}` },
    );
  }

  /** Waits until the pod's phase is `phase`. */
  waitForPhase(namespace: string, name: string, phase: string, timeoutMs: number): Promise<V1Pod> {
    return this.waitFor(namespace, name, (p) => p.status?.phase === phase, {
      timeoutMs,
      what: `pod ${namespace}/${name} ${phase}`,
    });
  }

  /** Waits until the API server no longer has this pod (or has a newer one under its name); resolves with when it noticed. */
  async waitForGone(namespace: string, name: string, uid: string, timeoutMs: number): Promise<number> {
    await waitFor(async () => (await this.read(namespace, name))?.metadata?.uid !== uid, {
      timeoutMs,
      intervalMs: 250,
      what: `pod ${namespace}/${name} (uid ${uid}) gone from the API server`,
    });
    return Date.now();
  }
}
