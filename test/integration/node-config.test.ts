/**
 * Dynamic node configuration against the real control plane and DynamoDB
 * Local: the heartbeat function, run through the local Lambda runtime as the
 * virtual kubelet's identity (infra/rbac.yaml), reads an assigned config from
 * a ConfigMap, checkpoints it, and applies it to its Node. Each scenario is
 * its own deployment (own table, node and ConfigMap).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PatchStrategy, setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { LocalLambdaRuntime, scheduledEvent } from '../../lib/local/lambda-runtime.ts';
import { CONFIG_OK } from '../../lib/node-config/decision.ts';
import {
  adminClients,
  deleteNodeAndLease,
  freshTable,
  functionEnv,
  readNode,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const heartbeatModule = fileURLToPath(new URL('../../functions/heartbeat.ts', import.meta.url));
/** The default status interval: what "within one status interval" means. */
const STATUS_INTERVAL_MS = 60_000;
/** The place infra/rbac.yaml's Role grants. */
const DEFAULT_PLACE = { namespace: 'kube-system', name: 'serverless-virtual-kubelet-node-config' };

const admin = adminClients();
const runtimes: LocalLambdaRuntime[] = [];
const nodes: string[] = [];
const namespace = uniqueName('node-config');

before(async () => {
  await admin.core.createNamespace({ body: { metadata: { name: namespace } } });
});

after(async () => {
  await Promise.all(runtimes.map((r) => r.stopAll({ abortRunning: true })));
  await Promise.all(nodes.map((n) => deleteNodeAndLease(admin, n)));
  await admin.core.deleteNamespacedConfigMap({ ...DEFAULT_PLACE }).catch(() => undefined);
  await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

/** A deployment whose heartbeat reads its node config from `place`. */
async function deployment(
  options: { place?: { namespace: string; name: string }; env?: Record<string, string> } = {},
) {
  const { name: tableName, table } = await freshTable();
  const node = uniqueName('cfg');
  nodes.push(node);
  const place = options.place ?? { namespace, name: uniqueName('vk-config') };
  const env = functionEnv(tableName, {
    SVK_NODE_NAMES: node,
    SVK_NODE_CONFIG_NAMESPACE: place.namespace,
    SVK_NODE_CONFIG_NAME: place.name,
    // A crashed holder is taken over quickly by the next process.
    SVK_LOCK_TTL_SECONDS: '4',
    SVK_LOCK_POLL_MS: '500',
    ...options.env,
  });
  const runtime = new LocalLambdaRuntime();
  runtimes.push(runtime);
  runtime.register({ name: 'heartbeat', handler: createHeartbeatHandler(env), timeoutMs: 15 * 60_000 });
  // A fresh process per invocation: a cold start that knows only what DynamoDB holds.
  runtime.register({
    name: 'heartbeat-cold',
    mode: 'child-process',
    module: heartbeatModule,
    env,
    timeoutMs: 15 * 60_000,
  });
  return { node, table, place, runtime };
}

async function putConfig(place: { namespace: string; name: string }, data: Record<string, string>) {
  const body = { metadata: { name: place.name, namespace: place.namespace }, data };
  try {
    return await admin.core.replaceNamespacedConfigMap({ ...place, body });
  } catch {
    return await admin.core.createNamespacedConfigMap({ namespace: place.namespace, body });
  }
}

function configOk(node: V1Node | undefined) {
  return node?.status?.conditions?.find((c) => c.type === CONFIG_OK);
}

/** Waits until the Node satisfies `check`, returning it. */
function waitNode(
  name: string,
  check: (node: V1Node) => boolean,
  what: string,
  timeoutMs = STATUS_INTERVAL_MS,
) {
  return waitFor(
    async () => {
      const node = await readNode(admin, name);
      return node && check(node) ? node : undefined;
    },
    { timeoutMs, what: `${name}: ${what}` },
  );
}

describe('dynamic node configuration', { concurrency: true }, () => {
  it('shows a valid change to labels and capacity on the Node within one status interval, ConfigOK naming the uid', {
    timeout: 6 * 60_000,
  }, async (t) => {
    const d = await deployment();
    const invocation = d.runtime.invoke('heartbeat', scheduledEvent());
    await waitNode(
      d.node,
      (n) => configOk(n)?.status === 'True' && /does not exist/.test(configOk(n)?.message ?? ''),
      'ConfigOK True on local config',
      30_000,
    );
    await admin.core.patchNode(
      { name: d.node, body: { metadata: { labels: { 'example.com/owner': 'someone-else' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const cm = await putConfig(d.place, {
      'config.yaml': 'labels:\n  team: blue\ncapacity: {cpu: 40, memory: 200Gi, pods: 220}\n',
    });
    const changedAt = Date.now();
    const node = await waitNode(
      d.node,
      (n) =>
        n.metadata?.labels?.team === 'blue' &&
        n.status?.capacity?.cpu === '40' &&
        n.status?.allocatable?.pods === '220',
      'the assigned labels and capacity',
    );
    const after = Date.now() - changedAt;
    const ok = configOk(node);
    assert.equal(ok?.status, 'True');
    assert.equal(ok?.reason, 'AssignedConfig');
    assert.match(ok?.message ?? '', new RegExp(`uid=${cm.metadata?.uid}`));
    assert.ok(after < STATUS_INTERVAL_MS, `applied after ${after} ms`);
    t.diagnostic(`labels and capacity on the Node ${after} ms after the ConfigMap changed`);

    // A label dropped from the config goes; another actor's label stays; capacity returns to local.
    await putConfig(d.place, { 'config.json': '{"labels": {"tier": "gold"}}' });
    const next = await waitNode(
      d.node,
      (n) =>
        n.metadata?.labels?.tier === 'gold' &&
        n.metadata?.labels?.team === undefined &&
        n.status?.capacity?.cpu === '20',
      'the second config',
    );
    assert.equal(next.metadata?.labels?.['example.com/owner'], 'someone-else');
    assert.equal(next.metadata?.labels?.type, 'virtual-kubelet');
    invocation.crash('done');
  });

  it('keeps the last-known-good when a change does not parse or is out of range, and rolls back to it, not to local', {
    timeout: 8 * 60_000,
  }, async () => {
    const trialSeconds = 45;
    const d = await deployment({ env: { SVK_NODE_CONFIG_TRIAL_SECONDS: String(trialSeconds) } });
    const invocation = d.runtime.invoke('heartbeat', scheduledEvent());
    const a = await putConfig(d.place, { 'config.yaml': 'labels: {team: blue}\n' });
    await waitNode(
      d.node,
      (n) => n.metadata?.labels?.team === 'blue' && /on trial until/.test(configOk(n)?.message ?? ''),
      'config A on trial',
    );
    const lkg = await waitNode(
      d.node,
      (n) => /\(last-known-good\)/.test(configOk(n)?.message ?? ''),
      'config A to become last-known-good after its trial',
      trialSeconds * 1000 + STATUS_INTERVAL_MS,
    );
    assert.match(configOk(lkg)?.message ?? '', new RegExp(`resourceVersion=${a.metadata?.resourceVersion} `));

    // B is valid and on trial: not last-known-good yet.
    await putConfig(d.place, { 'config.yaml': 'labels: {team: green}\n' });
    await waitNode(
      d.node,
      (n) => n.metadata?.labels?.team === 'green' && /on trial until/.test(configOk(n)?.message ?? ''),
      'config B on trial',
    );

    // An unparsable change: not used; back to A (the last-known-good), not B, not local.
    const c = await putConfig(d.place, { 'config.yaml': 'labels: {team: red\n' });
    const rejected = await waitNode(
      d.node,
      (n) => configOk(n)?.status === 'False' && n.metadata?.labels?.team === 'blue',
      'the unparsable config rejected, last-known-good A in use',
    );
    assert.equal(configOk(rejected)?.reason, 'AssignedConfigRejected');
    assert.match(
      configOk(rejected)?.message ?? '',
      new RegExp(`resourceVersion=${c.metadata?.resourceVersion} rejected: config.yaml does not parse`),
    );
    assert.match(
      configOk(rejected)?.message ?? '',
      new RegExp(`using last-known-good: .* resourceVersion=${a.metadata?.resourceVersion}$`),
    );

    // A value out of range: not used either, with the field named.
    const e = await putConfig(d.place, { 'config.yaml': 'labels: {team: red}\npingIntervalSeconds: 0\n' });
    const outOfRange = await waitNode(
      d.node,
      (n) =>
        new RegExp(`resourceVersion=${e.metadata?.resourceVersion} rejected`).test(
          configOk(n)?.message ?? '',
        ),
      'the out-of-range config rejected',
    );
    assert.equal(configOk(outOfRange)?.status, 'False');
    assert.match(configOk(outOfRange)?.message ?? '', /pingIntervalSeconds: must be at least 1/);
    assert.equal(outOfRange.metadata?.labels?.team, 'blue');
    invocation.crash('done');
  });

  it('finds the checkpoint in DynamoDB after a cold start; a corrupt checkpoint falls back to local config', {
    timeout: 8 * 60_000,
  }, async () => {
    const d = await deployment({ env: { SVK_NODE_CONFIG_TRIAL_SECONDS: '5' } });
    const a = await putConfig(d.place, {
      'config.yaml': 'labels: {team: blue}\ncapacity: {cpu: 8, pods: 30}\n',
    });
    const first = d.runtime.invoke('heartbeat', scheduledEvent());
    await waitNode(
      d.node,
      (n) => n.metadata?.labels?.team === 'blue' && /\(last-known-good\)/.test(configOk(n)?.message ?? ''),
      'config A in use and last-known-good',
    );
    first.crash('cold start next');
    await first.done;

    // While no process runs, the ConfigMap turns invalid: only the checkpoint knows A now.
    const bad = await putConfig(d.place, { 'config.yaml': 'capacity: {cpu: 8}\n' });
    const cold = d.runtime.invoke('heartbeat-cold', scheduledEvent());
    const rolledBack = await waitNode(
      d.node,
      (n) =>
        new RegExp(`resourceVersion=${bad.metadata?.resourceVersion} rejected`).test(
          configOk(n)?.message ?? '',
        ),
      'a fresh process to reject the change and use the checkpointed last-known-good',
    );
    assert.match(configOk(rolledBack)?.message ?? '', /capacity: must include pods/);
    assert.match(
      configOk(rolledBack)?.message ?? '',
      new RegExp(
        `using last-known-good: .* uid=${a.metadata?.uid} resourceVersion=${a.metadata?.resourceVersion}$`,
      ),
    );
    assert.equal(rolledBack.metadata?.labels?.team, 'blue');
    assert.equal(rolledBack.status?.capacity?.cpu, '8');
    cold.crash('corrupt the checkpoint next');
    await cold.done;

    const checkpointKey = {
      pk: 'config',
      sk: `checkpoint#${a.metadata?.uid}#${a.metadata?.resourceVersion}`,
    };
    assert.ok(await d.table.get(checkpointKey), 'the checkpoint of A is in DynamoDB');
    await d.table.update(checkpointKey, {
      expression: 'SET #d = :d',
      names: { '#d': 'document' },
      values: { ':d': '{"labels": {"team": ' },
    });
    const colder = d.runtime.invoke('heartbeat-cold', scheduledEvent());
    const local = await waitNode(
      d.node,
      (n) => /is corrupt/.test(configOk(n)?.message ?? '') && n.metadata?.labels?.team === undefined,
      'a fresh process to refuse the corrupt checkpoint and use local config',
    );
    assert.equal(configOk(local)?.status, 'False');
    assert.match(
      configOk(local)?.message ?? '',
      /last-known-good checkpoint uid=.* is corrupt: document is not JSON .*; using local config$/,
    );
    await waitNode(d.node, (n) => n.status?.capacity?.cpu === '20', 'local capacity');
    colder.crash('done');
  });

  it('returns the node to local config when the ConfigMap is deleted (the place infra/rbac.yaml grants)', {
    timeout: 6 * 60_000,
  }, async () => {
    const d = await deployment({ place: DEFAULT_PLACE });
    const cm = await putConfig(d.place, {
      'config.yaml': 'labels: {team: blue}\ntaints:\n  - {key: dedicated, value: vk, effect: NoSchedule}\n',
    });
    const invocation = d.runtime.invoke('heartbeat', scheduledEvent());
    // Labels and taints are patched before the status that carries ConfigOK: wait for both.
    const assigned = await waitNode(
      d.node,
      (n) =>
        n.metadata?.labels?.team === 'blue' &&
        (n.spec?.taints ?? []).some((t) => t.key === 'dedicated') &&
        !(n.spec?.taints ?? []).some((t) => t.key === 'virtual-kubelet.io/provider') &&
        // Registration writes the labels and taints before the first status write sets ConfigOK.
        new RegExp(`uid=${cm.metadata?.uid}`).test(configOk(n)?.message ?? ''),
      'the assigned labels and taints, and ConfigOK naming the ConfigMap',
    );
    assert.equal(configOk(assigned)?.status, 'True');
    assert.ok(await d.table.get({ pk: 'config', sk: 'state' }), 'the checkpoint state exists');

    await admin.core.deleteNamespacedConfigMap({ ...DEFAULT_PLACE });
    const local = await waitNode(
      d.node,
      (n) =>
        n.metadata?.labels?.team === undefined &&
        !(n.spec?.taints ?? []).some((t) => t.key === 'dedicated') &&
        (n.spec?.taints ?? []).some((t) => t.key === 'virtual-kubelet.io/provider'),
      'local labels and taints again',
    );
    const onLocal = await waitNode(
      d.node,
      (n) => /does not exist/.test(configOk(n)?.message ?? ''),
      'ConfigOK on local config',
    );
    assert.equal(configOk(onLocal)?.status, 'True');
    assert.ok(local);
    assert.equal(
      await d.table.get({ pk: 'config', sk: 'state' }),
      undefined,
      'current and last-known-good forgotten',
    );
    invocation.crash('done');
  });
});
