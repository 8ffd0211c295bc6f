/**
 * The order of provider statuses against the real API server and DynamoDB
 * Local: pod-status's poll, whose list of the node was read before pod-sync
 * wrote the status its create reported, must not write its older reading
 * over it (the pod would go back from Running to Pending, and a terminating
 * pod would read as no longer running and be force-deleted before its grace
 * period ended). The provider is the real mock provider, with its list held
 * back until the push was written, as a slow list of a loaded Docker host is.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { systemClock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import { podStatusHash } from '../../lib/pod/pod-hash.ts';
import { PodStatusSyncer } from '../../lib/pod/status/pod-status-syncer.ts';
import { podRef, writeProviderStatus } from '../../lib/pod/status/pod-status-writes.ts';
import { statusReadAt } from '../../lib/pod/status/status-order.ts';
import { MockPodProvider } from '../../lib/provider/mock/mock-pods.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  kubeletClients,
  uniqueName,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const kubelet = kubeletClients(env);
const namespace = uniqueName('status-order');
const node = uniqueName('vk-order');

/** The mock provider, whose next list of a node can be held back after it has read the pods. */
class HeldListProvider extends MockPodProvider {
  #held: { read: () => void; gate: Promise<void> } | undefined;

  /** Holds the next list: `read` resolves once it has read the pods; it returns them after `release`. */
  holdNextList(): { read: Promise<void>; release: () => void } {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const read = new Promise<void>((resolve) => {
      this.#held = { read: resolve, gate };
    });
    return { read, release };
  }

  override async listPods(nodeName: string, signal?: AbortSignal): Promise<V1Pod[]> {
    const pods = await super.listPods(nodeName, signal);
    const held = this.#held;
    this.#held = undefined;
    if (held) {
      held.read();
      await held.gate;
    }
    return pods;
  }
}

let knownPods: KnownPodStore;
let provider: HeldListProvider;

before(async () => {
  await admin.core.createNode({ body: { metadata: { name: node } } });
  await createTestNamespace(admin, namespace);
  const fresh = await freshTable(env);
  knownPods = new KnownPodStore(fresh.table);
  provider = new HeldListProvider({ table: fresh.table, clock: systemClock });
});

after(async () => {
  await deleteTestNamespace(admin, namespace);
  await admin.core.deleteNode({ name: node }).catch(() => undefined);
});

describe('status order', () => {
  it("pod-status's poll does not write a reading older than the status pod-sync wrote", async () => {
    const created = await admin.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'racing' },
        spec: { nodeName: node, containers: [{ name: 'main', image: 'busybox' }] },
      },
    });
    const ref = podRef(created);
    const identity = { ...ref, node };
    // pod-sync's record of the create, and the pod in the provider: Pending until it is started.
    const claimed = await knownPods.claim(undefined, identity, {
      token: 't',
      owner: 'test',
      hash: 'h',
      until: new Date(Date.now() + 60_000).toISOString(),
    });
    const reported = (await provider.createPod(created)) ?? {};
    await knownPods.completeClaim(claimed, 't', 'h');

    // pod-status's round reads the records and the provider's list, and takes long to write...
    const syncer = new PodStatusSyncer({
      core: kubelet.core,
      provider,
      knownPods,
      clock: systemClock,
      log: createLogger({ level: 'silent' }),
      maxParallel: 4,
    });
    const held = provider.holdNextList();
    const round = syncer.syncNode(node);
    await held.read;

    // ...while pod-sync writes the status a create or update reported since (told apart by its message).
    const newer: V1PodStatus = { ...reported, message: 'reported by a later create or update' };
    const readAtMs = Date.now();
    assert.equal(await writeProviderStatus(kubelet.core, ref, newer, { readAtMs }), 'written');
    const record = await knownPods.get(node, namespace, 'racing');
    assert.ok(record);
    await knownPods.recordStatus(identity, record.statusHash, podStatusHash(newer));

    held.release();
    const result = await round;
    assert.equal(result.failed, 0);
    const after = await admin.core.readNamespacedPod({ namespace, name: 'racing' });
    assert.equal(after.status?.message, newer.message, 'the older reading was not written over the newer');
    assert.equal(statusReadAt(after.status), readAtMs, 'the pod carries the stamp of the newer reading');
    assert.equal((await knownPods.get(node, namespace, 'racing'))?.statusHash, podStatusHash(newer));

    // A poll whose list is read afterwards writes what it reads.
    const next = await syncer.syncNode(node);
    assert.equal(next.written, 1);
    const later = await admin.core.readNamespacedPod({ namespace, name: 'racing' });
    assert.equal(later.status?.message, reported.message);
    assert.equal(later.status?.phase, reported.phase);
    assert.ok((statusReadAt(later.status) ?? 0) > readAtMs);
  });
});
