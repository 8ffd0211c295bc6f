import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { loadConfig } from '../../lib/config/load-config.ts';
import type { NodeSettings } from '../../lib/config/node-settings.ts';
import { APPLIED_ANNOTATION, metadataPatch, registrationNode } from '../../lib/node/node-object.ts';
import { parseAssignedConfig } from '../../lib/node-config/assigned-config.ts';
import type { CheckpointState, ConfigRef } from '../../lib/node-config/checkpoint-store.ts';
import { type Candidate, type DecisionInput, decide } from '../../lib/node-config/decision.ts';

const local: NodeSettings = loadConfig({}).node;
const source = { namespace: 'kube-system', name: 'vk-config' };
const A: ConfigRef = { uid: 'uid-a', resourceVersion: '10' };
const B: ConfigRef = { uid: 'uid-a', resourceVersion: '11' };
const NOW = Date.parse('2024-01-01T00:00:00Z');
const TRIAL = 600_000;

function parsed(yaml: string) {
  return parseAssignedConfig(local, { 'config.yaml': yaml });
}

function candidate(ref: ConfigRef, yaml: string, fromCheckpoint = false): Candidate {
  return { ref, config: parsed(yaml), fromCheckpoint };
}

function input(over: Partial<DecisionInput>): DecisionInput {
  return {
    source,
    local,
    fetched: { kind: 'found', ref: A, data: {} },
    state: undefined,
    now: NOW,
    trialMs: TRIAL,
    ...over,
  };
}

describe('assigned node config: parse and validate', () => {
  it('lays a YAML document over the local settings', () => {
    const result = parsed('labels: {team: blue}\ncapacity: {cpu: 40, memory: 200Gi, pods: 220}\n');
    assert.ok(result.ok);
    assert.deepEqual(result.settings.labels, { team: 'blue' });
    assert.deepEqual(result.settings.capacity, { cpu: '40', memory: '200Gi', pods: '220' });
    assert.deepEqual(result.settings.taints, local.taints, 'fields not set keep the local value');
  });

  it('reads JSON from config.json, intervals in seconds', () => {
    const result = parseAssignedConfig(local, {
      'config.json': '{"statusIntervalSeconds": 30, "taints": []}',
    });
    assert.ok(result.ok);
    assert.equal(result.settings.statusIntervalMs, 30_000);
    assert.deepEqual(result.settings.taints, []);
  });

  it('rejects unparsable YAML and JSON, naming the key', () => {
    const yaml = parsed('labels: {team: blue');
    assert.ok(!yaml.ok);
    assert.match(yaml.reason, /config\.yaml does not parse/);
    const json = parseAssignedConfig(local, { 'config.json': '{"labels":' });
    assert.ok(!json.ok);
    assert.match(json.reason, /config\.json does not parse/);
  });

  it('rejects values out of range with the same rules as the environment, naming each field', () => {
    const result = parsed('pingIntervalSeconds: 0\ncapacity: {cpu: lots}\nlabels: {"Bad.Prefix/x": "1"}\n');
    assert.ok(!result.ok);
    assert.match(result.reason, /pingIntervalSeconds: must be at least 1/);
    assert.match(result.reason, /capacity: "cpu=lots" is not a resource quantity/);
    assert.match(result.reason, /capacity: must include pods/);
    assert.match(result.reason, /labels: label key "Bad.Prefix\/x": prefix "Bad.Prefix"/);
  });

  it('rejects unknown fields, missing or doubled keys, a non-mapping, and a lease too short for its renewals', () => {
    assert.match((parsed('lables: {a: b}') as { reason: string }).reason, /lables/);
    assert.match(
      (parseAssignedConfig(local, { other: 'x' }) as { reason: string }).reason,
      /no data key config\.yaml or config\.json/,
    );
    assert.match(
      (parseAssignedConfig(local, { 'config.yaml': '{}', 'config.json': '{}' }) as { reason: string }).reason,
      /both/,
    );
    assert.match((parsed('- a\n- b') as { reason: string }).reason, /mapping/);
    assert.match(
      (parsed('leaseDurationSeconds: 30') as { reason: string }).reason,
      /leaseDurationSeconds: \(30\) must exceed 3 renew intervals/,
    );
  });
});

describe('node config decision', () => {
  it('is local and True when dynamic configuration is off or the ConfigMap does not exist', () => {
    const off = decide({ local, fetched: { kind: 'off' }, state: undefined, now: NOW, trialMs: TRIAL });
    assert.equal(off.using, 'local');
    assert.equal(off.condition.status, 'True');
    assert.match(off.condition.message, /dynamic node configuration is off/);
    const state: CheckpointState = { version: 3, current: { ...A, since: NOW }, lastKnownGood: A };
    const absent = decide(input({ fetched: { kind: 'absent' }, state }));
    assert.equal(absent.using, 'local');
    assert.equal(absent.condition.status, 'True');
    assert.match(absent.condition.message, /kube-system\/vk-config does not exist/);
    assert.equal(absent.nextState, 'clear', 'a removed ConfigMap forgets current and last-known-good');
  });

  it('uses a new valid config, checkpoints it and starts its trial', () => {
    const d = decide(input({ assigned: candidate(A, 'labels: {team: blue}') }));
    assert.equal(d.using, 'assigned');
    assert.deepEqual(d.settings.labels, { team: 'blue' });
    assert.equal(d.condition.status, 'True');
    assert.match(
      d.condition.message,
      /uid=uid-a resourceVersion=10 \(on trial until 2024-01-01T00:10:00.000Z\)/,
    );
    assert.deepEqual(d.checkpoint?.ref, A);
    assert.deepEqual(d.nextState, { version: 1, current: { ...A, since: NOW } });
  });

  it('makes the current config last-known-good once its trial has passed, and writes nothing after', () => {
    const state: CheckpointState = { version: 1, current: { ...A, since: NOW - TRIAL } };
    const d = decide(input({ state, assigned: candidate(A, 'labels: {team: blue}', true) }));
    assert.equal(d.checkpoint, undefined);
    assert.deepEqual(d.nextState, { version: 2, current: { ...A, since: NOW - TRIAL }, lastKnownGood: A });
    assert.match(d.condition.message, /last-known-good/);
    const later = decide(
      input({ state: { ...state, version: 2, lastKnownGood: A }, assigned: candidate(A, '{}', true) }),
    );
    assert.equal(later.nextState, undefined);
  });

  it('rolls an invalid change back to the last-known-good, writing nothing', () => {
    const state: CheckpointState = { version: 2, current: { ...A, since: NOW - TRIAL }, lastKnownGood: A };
    const d = decide(
      input({
        fetched: { kind: 'found', ref: B, data: {} },
        state,
        assigned: candidate(B, 'capacity: {pods: many}'),
        lastKnownGood: candidate(A, 'labels: {team: blue}', true),
      }),
    );
    assert.equal(d.using, 'last-known-good');
    assert.deepEqual(d.settings.labels, { team: 'blue' });
    assert.equal(d.condition.status, 'False');
    assert.equal(d.condition.reason, 'AssignedConfigRejected');
    assert.match(d.condition.message, /resourceVersion=11 rejected: config\.yaml is invalid: capacity/);
    assert.match(
      d.condition.message,
      /using last-known-good: ConfigMap kube-system\/vk-config uid=uid-a resourceVersion=10/,
    );
    assert.equal(d.nextState, undefined);
    assert.equal(d.checkpoint, undefined);
  });

  it('rolls an invalid change during a trial back to local when there is no last-known-good', () => {
    const state: CheckpointState = { version: 1, current: { ...A, since: NOW } };
    const d = decide(
      input({ fetched: { kind: 'found', ref: B, data: {} }, state, assigned: candidate(B, 'labels: [') }),
    );
    assert.equal(d.using, 'local');
    assert.equal(d.settings, local);
    assert.match(d.condition.message, /does not parse.*; using local config$/);
  });

  it('never uses a corrupt checkpoint: local config, with the reason', () => {
    const state: CheckpointState = { version: 1, current: { ...A, since: NOW } };
    const corrupt: Candidate = {
      ref: A,
      config: {
        ok: false,
        reason: 'checkpoint uid=uid-a resourceVersion=10 is corrupt: document is not JSON',
      },
      fromCheckpoint: true,
    };
    const d = decide(input({ state, assigned: corrupt }));
    assert.equal(d.using, 'local');
    assert.equal(d.condition.status, 'False');
    assert.equal(d.condition.reason, 'CheckpointCorrupt');
    assert.match(d.condition.message, /is corrupt: document is not JSON; using local config/);
    assert.equal(d.nextState, undefined);
  });

  it('keeps the current checkpoint when the ConfigMap cannot be read', () => {
    const state: CheckpointState = { version: 2, current: { ...A, since: NOW }, lastKnownGood: A };
    const d = decide(
      input({ fetched: { kind: 'error', message: 'HTTP 503' }, state, assigned: candidate(A, '{}', true) }),
    );
    assert.equal(d.using, 'assigned');
    assert.match(d.condition.message, /could not be read \(HTTP 503\), using its checkpoint/);
    const none = decide(input({ fetched: { kind: 'error', message: 'HTTP 403: forbidden' } }));
    assert.equal(none.using, 'local');
    assert.equal(none.condition.reason, 'AssignedConfigUnavailable');
    assert.match(none.condition.message, /HTTP 403: forbidden\); using local config/);
  });
});

describe('node labels and taints patch', () => {
  const name = 'vk';
  const node = (over: (n: V1Node) => void): V1Node => {
    const n = registrationNode(name, local);
    n.metadata = { ...n.metadata, resourceVersion: '5' };
    over(n);
    return n;
  };

  it('is nothing when the Node matches', () => {
    assert.equal(
      metadataPatch(
        name,
        local,
        node(() => {}),
      ),
      undefined,
    );
  });

  it('adds and removes our labels and taints, keeping those of others', () => {
    const current = node((n) => {
      n.metadata = { ...n.metadata, labels: { ...n.metadata?.labels, 'other.io/x': 'y' } };
      n.spec = {
        taints: [
          ...(n.spec?.taints ?? []),
          { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: new Date(NOW) },
        ],
      };
    });
    const next: NodeSettings = {
      ...local,
      labels: { team: 'blue' },
      taints: [{ key: 'dedicated', effect: 'NoSchedule' }],
    };
    const patch = metadataPatch(name, next, current) as {
      metadata: {
        resourceVersion: string;
        labels: Record<string, string | null>;
        annotations: Record<string, string>;
      };
      spec: { taints: Array<{ key: string }> };
    };
    assert.equal(patch.metadata.resourceVersion, '5');
    assert.deepEqual(patch.metadata.labels, { team: 'blue' });
    assert.deepEqual(
      patch.spec.taints.map((t) => t.key),
      ['node.kubernetes.io/unreachable', 'dedicated'],
    );
    assert.match(patch.metadata.annotations[APPLIED_ANNOTATION] ?? '', /"team"/);
    const applied = node((n) => {
      n.metadata = {
        ...n.metadata,
        labels: { ...n.metadata?.labels, team: 'blue' },
        annotations: patch.metadata.annotations,
      };
    });
    const back = metadataPatch(name, local, applied) as {
      metadata: { labels: Record<string, string | null> };
    };
    assert.deepEqual(back.metadata.labels, { team: null }, 'a label we set and no longer configure goes');
  });
});
