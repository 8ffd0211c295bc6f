/**
 * Bad input, fuzzed (fast-check): the pod-event validator, the node-config
 * document parser and the env resolver get arbitrary input. Every rejection
 * is the module's own error (or result) naming what is wrong, nothing throws
 * anything else, and nothing is written (all three are pure, or read-only
 * over the sources they are given; the input is left as it was).
 *
 * Runs are reproducible: the seed is fixed (FC_SEED overrides it to explore
 * further, FC_RUNS the number of runs).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { loadConfig } from '../../lib/config/load-config.ts';
import { parsePodEvent, podEventDetailSchema } from '../../lib/events/pod-event.ts';
import { InvalidEventError } from '../../lib/events/scheduled-event.ts';
import { parseAssignedConfig } from '../../lib/node-config/assigned-config.ts';
import { EnvResolveError } from '../../lib/pod/env/env-reasons.ts';
import type { EnvSources } from '../../lib/pod/env/env-sources.ts';
import { resolvePodEnv } from '../../lib/pod/env/pod-env.ts';

const params = {
  seed: Number(process.env.FC_SEED ?? 1_234_567),
  numRuns: Number(process.env.FC_RUNS ?? 300),
};

const validDetail = {
  v: 1,
  type: 'ADDED',
  node: 'vk-1',
  namespace: 'default',
  name: 'web-0',
  uid: '0b8f0c59-4a1e-4d36-9d61-2f0f2c8c8a11',
  resourceVersion: '4711',
} as const;

const validEvent = {
  version: '0',
  id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
  'detail-type': 'PodChanged',
  source: 'serverless-virtual-kubelet.pod-watch',
  account: '123456789012',
  time: '2026-11-23T00:00:00Z',
  region: 'eu-west-1',
  resources: [],
  detail: validDetail,
};

/** Runs `fn`; returns what it threw, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('pod event validator, fuzzed', () => {
  it('accepts or rejects anything with an InvalidEventError, never another error', () => {
    fc.assert(
      fc.property(fc.anything(), (input) => {
        const err = thrown(() => parsePodEvent(input));
        if (err === undefined) return;
        assert.ok(err instanceof InvalidEventError, `threw ${String(err)}`);
        assert.match(err.message, /^(not a pod event: |pod event of \d+ bytes)/);
      }),
      params,
    );
  });

  it('names the detail field that is wrong', () => {
    const fields = Object.keys(validDetail) as Array<keyof typeof validDetail>;
    const mutation = fc.constantFrom(...fields).chain((field) =>
      fc.tuple(
        fc.constant(field),
        fc.anything().filter((v) => !podEventDetailSchema.shape[field].safeParse(v).success),
      ),
    );
    fc.assert(
      fc.property(mutation, ([field, value]) => {
        const event = { ...validEvent, detail: { ...validDetail, [field]: value } };
        const err = thrown(() => parsePodEvent(event));
        assert.ok(err instanceof InvalidEventError, `accepted ${field}=${JSON.stringify(value)}`);
        assert.ok(
          err.message.includes(`detail.${field}`) || /^pod event of \d+ bytes/.test(err.message),
          `${err.message} does not name detail.${field}`,
        );
      }),
      params,
    );
  });

  it('names an unknown detail field, and an envelope field that is wrong', () => {
    const unknownKey = fc
      .string({ minLength: 1, maxLength: 20 })
      .filter((k) => !(k in validDetail) && k !== '__proto__');
    fc.assert(
      fc.property(unknownKey, fc.jsonValue(), (key, value) => {
        const err = thrown(() => parsePodEvent({ ...validEvent, detail: { ...validDetail, [key]: value } }));
        assert.ok(err instanceof InvalidEventError);
        assert.match(err.message, /detail/);
      }),
      params,
    );
    fc.assert(
      fc.property(
        fc.constantFrom('source', 'detail-type', 'version'),
        fc.string().filter((s) => !['serverless-virtual-kubelet.pod-watch', 'PodChanged', '0'].includes(s)),
        (field, value) => {
          const err = thrown(() => parsePodEvent({ ...validEvent, [field]: value }));
          assert.ok(err instanceof InvalidEventError);
          assert.ok(err.message.includes(field), `${err.message} does not name ${field}`);
        },
      ),
      params,
    );
  });
});

describe('node-config document parser, fuzzed', () => {
  const local = loadConfig({}).node;

  it('never throws on any ConfigMap data: a result, or a reason naming the key', () => {
    const seen = { ok: 0, refused: 0 };
    const data = fc.oneof(
      fc.dictionary(fc.string(), fc.string()),
      fc.record({ 'config.yaml': fc.string() }),
      fc.record({ 'config.json': fc.string() }),
      fc.record({ 'config.json': fc.jsonValue().map((v) => JSON.stringify(v)) }),
    );
    fc.assert(
      fc.property(data, (d) => {
        const before = JSON.stringify(d);
        const result = parseAssignedConfig(local, d);
        assert.equal(JSON.stringify(d), before, 'the data is left alone');
        seen[result.ok ? 'ok' : 'refused']++;
        if (result.ok) return;
        assert.ok(result.reason.length > 0);
        const key = 'config.yaml' in d ? 'config.yaml' : 'config.json' in d ? 'config.json' : undefined;
        if (key && !('config.yaml' in d && 'config.json' in d))
          assert.ok(result.reason.includes(key), result.reason);
      }),
      params,
    );
    assert.ok(seen.ok > 0 && seen.refused > 0, `both outcomes exercised: ${JSON.stringify(seen)}`);
  });

  it('names the setting that is wrong', () => {
    const valid = {
      labels: { team: 'blue' },
      taints: [{ key: 'dedicated', value: 'vk', effect: 'NoSchedule' }],
      capacity: { cpu: '8', memory: '32Gi', pods: '110' },
      leaseDurationSeconds: 40,
      leaseRenewIntervalSeconds: 10,
      statusIntervalSeconds: 60,
      pingIntervalSeconds: 10,
    };
    assert.equal(parseAssignedConfig(local, { 'config.json': JSON.stringify(valid) }).ok, true);
    const settings = Object.keys(valid) as Array<keyof typeof valid>;
    fc.assert(
      fc.property(fc.constantFrom(...settings), fc.jsonValue(), (field, value) => {
        const result = parseAssignedConfig(local, {
          'config.json': JSON.stringify({ ...valid, [field]: value }),
        });
        if (result.ok) return;
        // The lease rule ties the two lease settings together: either may be named.
        const named = field.startsWith('lease')
          ? /lease(Duration|RenewInterval)Seconds/
          : new RegExp(`\\b${field}\\b`);
        assert.match(result.reason, named);
      }),
      params,
    );
    const unknownKey = fc
      .string({ minLength: 1, maxLength: 20 })
      .filter((k) => !(k in valid) && k !== '__proto__');
    fc.assert(
      fc.property(unknownKey, fc.jsonValue(), (key, value) => {
        const result = parseAssignedConfig(local, {
          'config.json': JSON.stringify({ ...valid, [key]: value }),
        });
        assert.equal(result.ok, false, `accepted the unknown setting ${key}`);
      }),
      params,
    );
  });
});

describe('env resolver, fuzzed', () => {
  const name = fc.string({ maxLength: 12 });
  const keyRef = fc.record(
    { name, key: name, optional: fc.option(fc.boolean(), { nil: undefined }) },
    { requiredKeys: [] },
  );
  const source = fc.oneof(
    fc.record({ configMapKeyRef: keyRef }),
    fc.record({ secretKeyRef: keyRef }),
    fc.record({
      fieldRef: fc.record(
        {
          fieldPath: fc.oneof(
            name,
            fc.constantFrom(
              'metadata.name',
              'metadata.labels',
              "metadata.annotations['a']",
              'status.podIP',
              'spec.nodeName',
            ),
          ),
        },
        { requiredKeys: [] },
      ),
    }),
    fc.record({
      resourceFieldRef: fc.record(
        {
          resource: fc.oneof(
            name,
            fc.constantFrom('limits.cpu', 'requests.memory', 'limits.ephemeral-storage'),
          ),
          containerName: fc.option(name, { nil: undefined }),
          divisor: fc.option(fc.oneof(name, fc.constantFrom('1m', '1Mi', '0')), { nil: undefined }),
        },
        { requiredKeys: [] },
      ),
    }),
    fc.constant({}),
  );
  const envVar = fc.record(
    {
      name,
      value: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
      valueFrom: fc.option(source, { nil: undefined }),
    },
    { requiredKeys: ['name'] },
  );
  const envFrom = fc.record(
    {
      prefix: fc.option(name, { nil: undefined }),
      configMapRef: fc.option(
        fc.record({ name, optional: fc.option(fc.boolean(), { nil: undefined }) }, { requiredKeys: [] }),
        { nil: undefined },
      ),
      secretRef: fc.option(
        fc.record({ name, optional: fc.option(fc.boolean(), { nil: undefined }) }, { requiredKeys: [] }),
        { nil: undefined },
      ),
    },
    { requiredKeys: [] },
  );
  const container = fc.record({
    name,
    image: fc.constant('busybox'),
    env: fc.option(fc.array(envVar, { maxLength: 6 }), { nil: undefined }),
    envFrom: fc.option(fc.array(envFrom, { maxLength: 3 }), { nil: undefined }),
    resources: fc.option(
      fc.record(
        {
          limits: fc.dictionary(
            fc.constantFrom('cpu', 'memory'),
            fc.oneof(name, fc.constantFrom('500m', '1Gi', '2')),
          ),
        },
        { requiredKeys: [] },
      ),
      { nil: undefined },
    ),
  });
  const pod = fc.record({
    metadata: fc.record({
      namespace: fc.constantFrom('default', 'shop'),
      name: fc.constant('p'),
      labels: fc.dictionary(name, name),
    }),
    spec: fc.record({
      containers: fc.array(container, { minLength: 1, maxLength: 3 }),
      initContainers: fc.option(fc.array(container, { maxLength: 1 }), { nil: undefined }),
    }),
  });
  const objects = fc.dictionary(name, fc.dictionary(name, fc.string({ maxLength: 10 })));
  const failing = fc.boolean();

  it('resolves or rejects with an EnvResolveError naming the reference, never another error, and changes nothing', async () => {
    const seen = { resolved: 0, rejected: 0 };
    await fc.assert(
      fc.asyncProperty(pod, objects, objects, failing, async (p, configMaps, secrets, unreadable) => {
        // Deliberately malformed pods (keys missing): what the resolver must survive.
        const input = p as unknown as V1Pod;
        const before = JSON.stringify(input);
        const sources: EnvSources = {
          configMap: async (_ns, n) => {
            if (unreadable && n.startsWith('x')) throw new Error('API server unavailable');
            return Object.hasOwn(configMaps, n) ? configMaps[n] : undefined;
          },
          secret: async (_ns, n) => (Object.hasOwn(secrets, n) ? secrets[n] : undefined),
          services: async (ns, name) => {
            if (unreadable && ns.startsWith('x')) throw new Error('API server unavailable');
            const all = [
              {
                metadata: { namespace: 'default', name: 'kubernetes' },
                spec: { clusterIP: '10.0.0.1', ports: [{ name: 'https', port: 443 }] },
              },
              {
                metadata: { namespace: ns, name: 'db' },
                spec: { clusterIP: '10.0.0.9', ports: [{ port: 5432 }] },
              },
            ];
            return all.filter(
              (s) => s.metadata.namespace === ns && (name === undefined || s.metadata.name === name),
            );
          },
        };
        try {
          const { pod: resolved } = await resolvePodEnv(input, sources);
          for (const c of resolved.spec?.containers ?? []) {
            assert.equal(c.envFrom, undefined);
            for (const v of c.env ?? [])
              assert.equal(typeof v.value, 'string', `${v.name} resolved to a string`);
          }
          seen.resolved++;
        } catch (err) {
          assert.ok(
            err instanceof EnvResolveError,
            `threw ${err instanceof Error ? err.stack : String(err)}`,
          );
          assert.ok(err.reason.length > 0 && err.message.length > 0);
          seen.rejected++;
        }
        assert.equal(JSON.stringify(input), before, 'the pod is left alone');
      }),
      params,
    );
    assert.ok(seen.resolved > 0 && seen.rejected > 0, `both outcomes exercised: ${JSON.stringify(seen)}`);
  });
});
