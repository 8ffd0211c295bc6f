/**
 * An Event on a pod whose namespace is being deleted, against the real API
 * server: the refusal is expected (one per pod while a namespace of many
 * pods goes), so it is logged at debug level, in a few short fields, and
 * never as a warning.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { systemClock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { KubePodEventRecorder } from '../../lib/pod/sync/pod-events.ts';
import { testEnv } from '../support/env.ts';
import { createIdleNode, createIdlePod } from '../support/idle-pods.ts';
import { adminClients, createTestNamespace, kubeletClients, uniqueName, waitFor } from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const namespace = uniqueName('terminating');
const node = uniqueName('refusal');

after(async () => {
  await admin.core
    .deleteNamespacedPod({ namespace, name: 'web', gracePeriodSeconds: 0 })
    .catch(() => undefined);
  await admin.core.deleteNode({ name: node }).catch(() => undefined);
});

describe('Events in a namespace being deleted', () => {
  it('are refused by the API server, and logged at debug level in short fields', {
    timeout: 2 * 60_000,
  }, async () => {
    await createTestNamespace(admin, namespace);
    await createIdleNode(admin, node);
    const pod = await createIdlePod(admin, namespace, node, 'web');
    // No kubelet runs the pod, so its graceful delete keeps the namespace Terminating.
    await admin.core.deleteNamespace({ name: namespace });
    await waitFor(
      async () => (await admin.core.readNamespace({ name: namespace })).status?.phase === 'Terminating',
      { timeoutMs: 30_000, what: `${namespace} Terminating` },
    );

    const lines: string[] = [];
    const log = createLogger(
      { level: 'debug' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      }),
    );
    const recorder = new KubePodEventRecorder({ core: kubeletClients(env).core, clock: systemClock, log });
    await recorder.record(pod, 'Normal', 'ProviderDeleteSuccess', 'deleted in the provider');

    const entries = lines.map(
      (l) => JSON.parse(l) as { level: string; msg: string; err?: Record<string, unknown> },
    );
    assert.deepEqual(
      entries.filter((e) => e.level !== 'DEBUG'),
      [],
      'no warning for an expected refusal',
    );
    const refusal = entries.find((e) => e.msg === 'event not recorded: its namespace is being deleted');
    assert.ok(refusal, lines.join('\n'));
    assert.equal(refusal.err?.status, 403);
    assert.equal(refusal.err?.reason, 'Forbidden');
    assert.match(String(refusal.err?.message), /because it is being terminated/);
    assert.deepEqual(Object.keys(refusal.err ?? {}).sort(), ['message', 'reason', 'status', 'type']);
    assert.ok((lines[0] ?? '').length < 500, `${lines[0]?.length} characters`);
  });
});
