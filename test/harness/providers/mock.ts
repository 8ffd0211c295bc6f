import type { V1Pod } from '@kubernetes/client-node';
import { systemClock } from '../../../lib/clock.ts';
import {
  type MockPodRecord,
  mockNodeIndexPartition,
  mockPodFromItem,
  mockPodHeld,
  mockPodKey,
} from '../../../lib/provider/mock/mock-pod-record.ts';
import { mockPodStatus } from '../../../lib/provider/mock/mock-pod-status.ts';
import { MockPodProvider } from '../../../lib/provider/mock/mock-pods.ts';
import type { StateTable } from '../../../lib/state/dynamodb.ts';
import type {
  PodRef,
  ProbeContext,
  ProbedHistory,
  ProbedPod,
  ProviderProbe,
  ProviderSetup,
} from '../provider-setup.ts';

/**
 * The mock provider in the harness: its pods are records in the
 * deployment's own table, so the probe reads those records (with their
 * create and delete counters) directly, not through the provider's methods.
 */
export function mockProviderSetup(): ProviderSetup {
  return {
    name: 'mock',
    image: 'public.ecr.aws/docker/library/busybox:1.36',
    probe: (context) => new MockProbe(context),
    notApplicable: {
      localhost:
        'the mock runs no processes: its containers share no network namespace, nothing listens on localhost',
      'init-containers-files':
        'the mock runs no processes: there is no emptyDir for init containers to write to (order is checked through their status times)',
      'file-volumes':
        'the mock runs no processes and has no filesystem: there are no files to mount or read back',
      'volume-update': 'the mock has no files to update',
      'volume-missing-source':
        'the mock mounts no volumes, so it never waits for a ConfigMap (it runs the pod at once)',
      'pod-extras':
        'the mock runs no processes and has no filesystem: it accepts fsGroup, seLinuxOptions and hostAliases, and there is no /etc/hosts, file or env to read back',
      'projected-token': 'the mock runs no processes: no pod reads its token or calls the API server',
      'projected-token-refresh': 'the mock mounts no token to renew',
    },
  };
}

class MockProbe implements ProviderProbe {
  readonly #table: StateTable;
  readonly #provider: MockPodProvider;

  constructor(context: ProbeContext) {
    this.#table = context.table;
    this.#provider = new MockPodProvider({ table: context.table, clock: systemClock });
  }

  async pods(node: string): Promise<ProbedPod[]> {
    const now = Date.now();
    return (await this.#records(node))
      .filter((r) => mockPodHeld(r, now))
      .map((r) => ({
        namespace: r.namespace,
        name: r.name,
        uid: r.uid,
        node: r.node,
        running: running(r, now),
      }));
  }

  async history(ref: PodRef): Promise<ProbedHistory | undefined> {
    const item = await this.#table.get(mockPodKey(ref.namespace, ref.name));
    const record = item ? mockPodFromItem(item) : undefined;
    if (!record || record.uid !== ref.uid) return undefined;
    const now = Date.now();
    return {
      creates: record.creates,
      deletes: record.deletes,
      running: mockPodHeld(record, now) && running(record, now),
    };
  }

  /** The delete's time while a preStop hook runs, and when the record says SIGTERM came. */
  async hooks(ref: PodRef): Promise<{ preStopAt?: number; stopSignalAt?: number } | undefined> {
    const item = await this.#table.get(mockPodKey(ref.namespace, ref.name));
    const record = item ? mockPodFromItem(item) : undefined;
    if (!record || record.uid !== ref.uid || record.deletedAt === undefined) return undefined;
    const hooked = record.containers.some((c) => c.probes?.preStopSeconds !== undefined);
    return {
      ...(hooked ? { preStopAt: record.deletedAt } : {}),
      ...(record.signalAt !== undefined ? { stopSignalAt: record.signalAt } : {}),
    };
  }

  async injectPod(pod: V1Pod): Promise<void> {
    await this.#provider.createPod(pod);
  }

  async purge(nodes: readonly string[]): Promise<void> {
    for (const node of nodes) {
      for (const r of await this.#records(node)) await this.#table.delete(mockPodKey(r.namespace, r.name));
    }
  }

  async #records(node: string): Promise<MockPodRecord[]> {
    const items = await this.#table.query(mockNodeIndexPartition(node), { index: 'gsi1' });
    return items.map(mockPodFromItem).filter((r) => r.node === node);
  }
}

/** Some container of the pod runs at `now`, by the mock's own timeline. */
function running(record: MockPodRecord, now: number): boolean {
  const status = mockPodStatus(record, now, '');
  return [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].some(
    (c) => c.state?.running !== undefined,
  );
}
