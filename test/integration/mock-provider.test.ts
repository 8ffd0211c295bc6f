import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  MOCK_EXIT_CODE_ANNOTATION,
  MOCK_FAIL_CREATE_ANNOTATION,
  MOCK_FINISH_AFTER_ANNOTATION,
  MOCK_START_DELAY_ANNOTATION,
} from '../../lib/provider/mock/mock-pod-plan.ts';
import { MockPodProvider, mockPodRecord } from '../../lib/provider/mock/mock-pods.ts';
import { isProviderNotFound } from '../../lib/provider/provider.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { freshTable, uniqueName, waitFor } from '../support/kube.ts';

/** Wall-clock time the test moves by hand: the mock computes every status from it. */
function manualClock() {
  const clock = new FakeClock({ wall: Date.parse('2026-03-01T10:00:00Z') });
  return { clock, advance: (seconds: number) => clock.advance(seconds * 1000) };
}

function pod(
  namespace: string,
  name: string,
  options: { uid?: string; node?: string; annotations?: Record<string, string>; image?: string } = {},
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      namespace,
      name,
      uid: options.uid ?? randomUUID(),
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: {
      nodeName: options.node ?? 'vk-1',
      restartPolicy: 'Never',
      containers: [{ name: 'app', image: options.image ?? 'nginx:1.27' }],
    },
  };
}

const uidOf = (p: V1Pod) => p.metadata?.uid ?? '';

describe('mock provider pods in DynamoDB Local', () => {
  let table: StateTable;
  before(async () => {
    ({ table } = await freshTable());
  });

  /** A provider and a namespace no other test uses. */
  function setup() {
    const time = manualClock();
    return { ...time, ns: uniqueName('ns'), provider: new MockPodProvider({ table, clock: time.clock }) };
  }

  it('creates a pod once when five creates of the same uid race, and runs it at once', async () => {
    const { provider, ns } = setup();
    const web = pod(ns, 'web');

    await Promise.all(Array.from({ length: 5 }, () => provider.createPod(web)));

    const record = await mockPodRecord(table, ns, 'web');
    assert.equal(record?.creates, 1);
    assert.equal(record?.uid, uidOf(web));
    const running = await provider.getPod(ns, 'web');
    assert.equal(running?.metadata?.uid, uidOf(web));
    assert.equal(running?.status?.phase, 'Running');
    assert.equal(running?.status?.containerStatuses?.[0]?.state?.running !== undefined, true);
    assert.match(running?.status?.podIP ?? '', /^10\./);

    await provider.createPod(web);
    assert.equal((await mockPodRecord(table, ns, 'web'))?.creates, 1, 'a later retry starts nothing');
  });

  it('replaces a pod by a new one with the same name, and refuses a late delete of the old one', async () => {
    const { provider, ns } = setup();
    const old = pod(ns, 'db');
    const fresh = pod(ns, 'db');
    await provider.createPod(old);
    await provider.createPod(fresh);

    const record = await mockPodRecord(table, ns, 'db');
    assert.equal(record?.uid, uidOf(fresh));
    assert.equal(record?.creates, 1);
    await assert.rejects(provider.deletePod(old), isProviderNotFound);
    assert.equal((await provider.getPod(ns, 'db'))?.metadata?.uid, uidOf(fresh));
    assert.equal((await provider.getPod(ns, 'db'))?.status?.phase, 'Running');
  });

  it('settles on exactly one of several new uids racing for one name', async () => {
    const { provider, ns } = setup();
    const pods = Array.from({ length: 5 }, () => pod(ns, 'api'));

    await Promise.all(pods.map((p) => provider.createPod(p)));

    const record = await mockPodRecord(table, ns, 'api');
    assert.ok(pods.some((p) => uidOf(p) === record?.uid));
    assert.equal(record?.creates, 1);
    assert.equal((await provider.getPod(ns, 'api'))?.metadata?.uid, record?.uid);
  });

  it('deletes once: a second delete is NotFound, and the pod is gone from get and list', async () => {
    const { provider, ns } = setup();
    const node = uniqueName('vk');
    const job = pod(ns, 'job', { node });
    await provider.createPod(job);

    await provider.deletePod(job);
    await assert.rejects(provider.deletePod(job), isProviderNotFound);

    assert.equal(await provider.getPod(ns, 'job'), undefined);
    await waitFor(async () => (await provider.listPods(node)).length === 0, {
      timeoutMs: 10_000,
      what: 'the deleted pod to leave the node index',
    });
    const tombstone = await mockPodRecord(table, ns, 'job');
    assert.equal(tombstone?.deletes, 1);
    assert.equal(tombstone?.creates, 1);
    assert.equal(typeof tombstone?.deletedAt, 'number');
  });

  it('counts a create after the delete of the same uid as a second start', async () => {
    const { provider, ns } = setup();
    const web = pod(ns, 'again');
    await provider.createPod(web);
    await provider.deletePod(web);

    await provider.createPod(web);

    const record = await mockPodRecord(table, ns, 'again');
    assert.equal(record?.creates, 2);
    assert.equal(record?.deletedAt, undefined);
    assert.equal((await provider.getPod(ns, 'again'))?.status?.phase, 'Running');
  });

  it('deletes nothing for a pod it never had', async () => {
    const { provider, ns } = setup();
    await assert.rejects(provider.deletePod(pod(ns, 'ghost')), isProviderNotFound);
    assert.equal(await mockPodRecord(table, ns, 'ghost'), undefined);
  });

  it('updates a running pod of the same uid only', async () => {
    const { provider, ns } = setup();
    const web = pod(ns, 'web');
    await assert.rejects(provider.updatePod(web), isProviderNotFound);
    assert.equal(await mockPodRecord(table, ns, 'web'), undefined, 'an update creates nothing');

    await provider.createPod(web);
    await provider.updatePod(pod(ns, 'web', { uid: uidOf(web), image: 'nginx:1.28' }));
    const updated = await provider.getPod(ns, 'web');
    assert.equal(updated?.status?.containerStatuses?.[0]?.image, 'nginx:1.28');
    assert.equal((await mockPodRecord(table, ns, 'web'))?.updates, 1);

    await assert.rejects(provider.updatePod(pod(ns, 'web')), isProviderNotFound, 'another uid');
    await provider.deletePod(web);
    await assert.rejects(provider.updatePod(web), isProviderNotFound, 'deleted');
  });

  it('lists only the pods of the node asked for', async () => {
    const { provider, ns } = setup();
    const [mine, other] = [uniqueName('vk'), uniqueName('vk')];
    await Promise.all([
      provider.createPod(pod(ns, 'a', { node: mine })),
      provider.createPod(pod(ns, 'b', { node: mine })),
      provider.createPod(pod(ns, 'c', { node: other })),
    ]);

    const listed = await waitFor(
      async () => {
        const pods = await provider.listPods(mine);
        return pods.length === 2 ? pods : undefined;
      },
      { timeoutMs: 10_000, what: `two pods listed on ${mine}` },
    );
    assert.deepEqual(listed.map((p) => p.metadata?.name).sort(), ['a', 'b']);
    for (const p of listed) {
      assert.equal(p.spec?.nodeName, mine);
      assert.equal(p.status?.phase, 'Running');
    }
    assert.deepEqual(await provider.listPods(uniqueName('vk')), []);
  });

  it('fails a create as the annotation asks, and stores nothing', async () => {
    const { provider, ns } = setup();
    const doomed = pod(ns, 'doomed', { annotations: { [MOCK_FAIL_CREATE_ANNOTATION]: 'out of capacity' } });

    await assert.rejects(provider.createPod(doomed), (err: Error) => {
      assert.equal(err.message, 'out of capacity');
      assert.equal(isProviderNotFound(err), false);
      return true;
    });
    assert.equal(await mockPodRecord(table, ns, 'doomed'), undefined);
    assert.equal(await provider.getPod(ns, 'doomed'), undefined);
  });

  it('refuses an invalid annotation by name, and stores nothing', async () => {
    const { provider, ns } = setup();
    const bad = pod(ns, 'bad', { annotations: { [MOCK_FINISH_AFTER_ANNOTATION]: 'soon' } });

    await assert.rejects(provider.createPod(bad), new RegExp(MOCK_FINISH_AFTER_ANNOTATION));
    assert.equal(await mockPodRecord(table, ns, 'bad'), undefined);
  });

  it('starts slowly, then finishes with the exit code, as the clock moves', async () => {
    const { provider, ns, advance } = setup();
    await provider.createPod(
      pod(ns, 'batch', {
        annotations: {
          [MOCK_START_DELAY_ANNOTATION]: '10',
          [MOCK_FINISH_AFTER_ANNOTATION]: '30',
          [MOCK_EXIT_CODE_ANNOTATION]: '2',
        },
      }),
    );

    const pending = await provider.getPod(ns, 'batch');
    assert.equal(pending?.status?.phase, 'Pending');
    assert.equal(pending?.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    await advance(10);
    assert.equal((await provider.getPod(ns, 'batch'))?.status?.phase, 'Running');
    await advance(30);
    const failed = await provider.getPod(ns, 'batch');
    assert.equal(failed?.status?.phase, 'Failed');
    assert.equal(failed?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 2);
  });

  it('finishes Succeeded with exit code 0 by default', async () => {
    const { provider, ns, advance } = setup();
    await provider.createPod(pod(ns, 'task', { annotations: { [MOCK_FINISH_AFTER_ANNOTATION]: '5' } }));
    await advance(5);
    const done = await provider.getPod(ns, 'task');
    assert.equal(done?.status?.phase, 'Succeeded');
    assert.equal(done?.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
  });

  it('refuses a pod without a node, naming the field', async () => {
    const { provider, ns } = setup();
    const unbound = pod(ns, 'unbound');
    delete unbound.spec?.nodeName;
    await assert.rejects(provider.createPod(unbound), /spec\.nodeName/);
    assert.equal(await mockPodRecord(table, ns, 'unbound'), undefined);
  });
});
