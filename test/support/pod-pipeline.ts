import type { V1Pod } from '@kubernetes/client-node';
import { buildPodReconciler } from '../../lib/app/dependencies.ts';
import { systemClock } from '../../lib/clock.ts';
import { isNotFound } from '../../lib/kube/client.ts';
import type { Logger } from '../../lib/log/logger.ts';
import { kubeEnvSources } from '../../lib/pod/env/env-sources.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import { PodStatusSyncer } from '../../lib/pod/status/pod-status-syncer.ts';
import { KubePodEventRecorder } from '../../lib/pod/sync/pod-events.ts';
import type { PodReconciler } from '../../lib/pod/sync/pod-reconciler.ts';
import type { PodProvider } from '../../lib/provider/provider.ts';
import { testEnv } from './env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  kubeletClients,
} from './kube.ts';

/**
 * A provider under pod-sync's reconciler and pod-status's syncer, with the
 * kubelet's identity against the real API server, for tests that drive the
 * two steps themselves (the whole deployment, schedules and bus included, is
 * the conformance suite's): a Node and a namespace of the test's, a fresh
 * known-pod table, and the pods left in the provider deleted at the end.
 */
export class PodPipeline {
  readonly env = testEnv();
  readonly admin = adminClients(this.env);
  readonly kubelet = kubeletClients(this.env);
  #knownPods: KnownPodStore | undefined;

  constructor(
    private readonly options: {
      namespace: string;
      node: string;
      /** The provider, once `setUp` may have built it. */
      provider: () => PodProvider;
      log: Logger;
      /** The reconciler's claim owner. */
      owner: string;
    },
  ) {}

  get knownPods(): KnownPodStore {
    if (!this.#knownPods) throw new Error('PodPipeline.setUp has not run');
    return this.#knownPods;
  }

  async setUp(): Promise<void> {
    const { namespace, node } = this.options;
    await this.admin.core.createNode({ body: { metadata: { name: node } } });
    await createTestNamespace(this.admin, namespace);
    this.#knownPods = new KnownPodStore((await freshTable(this.env)).table);
  }

  async tearDown(): Promise<void> {
    const { namespace, node } = this.options;
    const provider = this.options.provider();
    for (const pod of await provider.listPods(node)) await provider.deletePod(pod).catch(() => undefined);
    await deleteTestNamespace(this.admin, namespace);
    await this.admin.core.deleteNode({ name: node }).catch(() => undefined);
  }

  /** pod-sync's reconciler, as one invocation builds it. */
  reconciler(): PodReconciler {
    const { node, log, owner } = this.options;
    const { core } = this.kubelet;
    return buildPodReconciler({
      core,
      provider: this.options.provider(),
      knownPods: this.knownPods,
      events: new KubePodEventRecorder({ core, clock: systemClock, log }),
      envSources: kubeEnvSources(core),
      nodes: [node],
      clock: systemClock,
      log,
      owner,
      claimMs: 30_000,
      waitUntil: performance.now() + 30_000,
    });
  }

  /** pod-status's syncer (one `syncNode` is one poll of the node). */
  syncer(): PodStatusSyncer {
    const { log } = this.options;
    return new PodStatusSyncer({
      core: this.kubelet.core,
      provider: this.options.provider(),
      knownPods: this.knownPods,
      clock: systemClock,
      log,
      maxParallel: 4,
    });
  }

  /** The pod as the API server stores it, or undefined once it is gone. */
  async readPod(name: string): Promise<V1Pod | undefined> {
    try {
      return await this.admin.core.readNamespacedPod({ namespace: this.options.namespace, name });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
