/**
 * What functions read from outside, fuzzed (fast-check): the tick trigger
 * (an SQS event of the tick queue, or the keeper's schedule), the ECS Task
 * State Change event, and the Docker provider's plan as persisted in an
 * infra container's env (read back from the engine after a cold start).
 * Whatever comes in is taken, or rejected with the module's own error (or,
 * for the plan, read as no plan); nothing escapes as another exception, and
 * what is taken holds no invalid time or number.
 *
 * Runs are reproducible: the seed is fixed (FC_SEED overrides it, FC_RUNS
 * the number of runs).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { InvalidEventError } from '../../lib/events/scheduled-event.ts';
import { podPlan } from '../../lib/provider/docker/pod-plan.ts';
import { PLAN_ENV, planEnv, planFromEnv } from '../../lib/provider/docker/pod-plan-codec.ts';
import { parseTaskGroup } from '../../lib/provider/ecs/run-task-input.ts';
import {
  InvalidTaskStateEventError,
  parseTaskStateEvent,
  snapshotFromEvent,
} from '../../lib/provider/ecs/task-state-event.ts';
import { parseTickTrigger } from '../../lib/tick/tick-trigger.ts';

const params = {
  seed: Number(process.env.FC_SEED ?? 2_468_013),
  numRuns: Number(process.env.FC_RUNS ?? 300),
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

/** `value` with the field at `path` replaced by `replacement` (or removed, for undefined). */
function replaced(value: unknown, path: readonly string[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head = '', ...rest] = path;
  const base: Record<string, unknown> =
    typeof value === 'object' && value !== null ? { ...(value as Record<string, unknown>) } : {};
  if (Array.isArray(value))
    return value.map((v, i) => (String(i) === head ? replaced(v, rest, replacement) : v));
  const next = replaced(base[head], rest, replacement);
  if (next === undefined) delete base[head];
  else base[head] = next;
  return base;
}

/** Any JSON-ish value, and the values that trip parsers: numbers out of range, odd strings. */
const oddValue = fc.oneof(
  fc.anything(),
  fc.constantFrom(
    undefined,
    null,
    '',
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    2 ** 53,
    1e300,
    '2026-02-31T00:00:00Z',
    '2026-01-01T00:00:00+99:99',
    '9'.repeat(30),
  ),
);

describe('tick trigger, fuzzed', () => {
  const MARKER = 'body-content-7f3a';
  const record = fc.record({
    messageId: fc.oneof(fc.string(), fc.uuid()),
    body: fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.record({ v: oddValue, slot: oddValue }).map((m) => JSON.stringify(m) ?? ''),
      fc.string().map((s) => `${MARKER}${s}`),
      fc.nat().map((slot) => JSON.stringify({ v: 1, slot })),
      fc.nat().map((slot) => JSON.stringify({ v: 1, slot, [MARKER]: true })),
    ),
    eventSource: fc.oneof(fc.constant('aws:sqs'), fc.string()),
    attributes: fc.record(
      {
        ApproximateReceiveCount: fc.oneof(fc.nat().map(String), fc.string(), fc.constant('9'.repeat(40))),
        MessageGroupId: fc.oneof(fc.constant('tick'), fc.string()),
      },
      { requiredKeys: [] },
    ),
  });
  const event = fc.oneof(
    fc.anything(),
    fc.record({ Records: fc.array(record, { maxLength: 4 }) }),
    fc.record({ Records: oddValue }),
    fc.record({
      version: fc.constant('0'),
      id: fc.uuid(),
      'detail-type': fc.oneof(fc.constant('Scheduled Event'), fc.string()),
      source: fc.oneof(fc.constant('aws.events'), fc.string()),
      time: fc.oneof(fc.constant('2026-03-01T10:00:00Z'), fc.string()),
      detail: fc.oneof(fc.constant({}), oddValue),
    }),
  );

  it('gives a trigger or an InvalidEventError, never another error; a rejected body is never quoted', () => {
    fc.assert(
      fc.property(event, (e) => {
        let trigger: ReturnType<typeof parseTickTrigger>;
        try {
          trigger = parseTickTrigger(e);
        } catch (err) {
          assert.ok(err instanceof InvalidEventError, `not an InvalidEventError: ${String(err)}`);
          return;
        }
        if (trigger.kind === 'chain') {
          assert.ok(Number.isSafeInteger(trigger.slot) && trigger.slot >= 0, String(trigger.slot));
          assert.ok(Number.isFinite(trigger.receiveCount));
        }
        if (trigger.kind !== 'keeper') {
          for (const r of trigger.rejected) assert.ok(!r.reason.includes(MARKER), r.reason);
        }
      }),
      params,
    );
  });
});

describe('ECS Task State Change event, fuzzed', () => {
  const EVENT = {
    version: '0',
    id: '3317b2af-7005-947d-b652-f55e762e571a',
    'detail-type': 'ECS Task State Change',
    source: 'aws.ecs',
    account: '123456789012',
    time: '2026-03-01T10:00:07Z',
    region: 'eu-west-1',
    resources: [],
    detail: {
      attachments: [{ type: 'eni', details: [{ name: 'privateIPv4Address', value: '10.0.3.17' }] }],
      clusterArn: 'arn:aws:ecs:eu-west-1:123456789012:cluster/pods',
      containers: [{ name: 'app', lastStatus: 'RUNNING', runtimeId: 'r-1', exitCode: 0 }],
      createdAt: '2026-03-01T10:00:00.123Z',
      desiredStatus: 'RUNNING',
      group: 'svk:7c2b8a4e-1f0d-4c55-9d1e-2a3b4c5d6e7f:0',
      lastStatus: 'RUNNING',
      startedAt: '2026-03-01T10:00:06.5Z',
      updatedAt: '2026-03-01T10:00:07.001Z',
      taskArn: 'arn:aws:ecs:eu-west-1:123456789012:task/pods/b99d40b3517640f7',
      version: 3,
    },
  };
  const paths: string[][] = [
    ['source'],
    ['detail-type'],
    ['detail'],
    ...Object.keys(EVENT.detail).map((k) => ['detail', k]),
    ['detail', 'containers', '0', 'name'],
    ['detail', 'containers', '0', 'exitCode'],
    ['detail', 'attachments', '0', 'details'],
    ['detail', 'attachments', '0', 'details', '0', 'value'],
  ];
  const mutated = fc
    .array(fc.tuple(fc.constantFrom(...paths), oddValue), { minLength: 1, maxLength: 3 })
    .map((changes) => changes.reduce<unknown>((e, [path, value]) => replaced(e, path, value), EVENT));

  it('takes the event it documents', () => {
    assert.equal(snapshotFromEvent(parseTaskStateEvent(EVENT)).podIp, '10.0.3.17');
  });

  it('gives a detail or an InvalidTaskStateEventError, never another error; a detail holds only valid times', () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), mutated), (e) => {
        let detail: ReturnType<typeof parseTaskStateEvent>;
        try {
          detail = parseTaskStateEvent(e);
        } catch (err) {
          assert.ok(
            err instanceof InvalidTaskStateEventError,
            `not an InvalidTaskStateEventError: ${String(err)}`,
          );
          return;
        }
        const snapshot = snapshotFromEvent(detail);
        for (const key of [
          'createdAt',
          'pullStartedAt',
          'pullStoppedAt',
          'startedAt',
          'stoppingAt',
          'stoppedAt',
          'updatedAt',
        ] as const) {
          const at = snapshot[key];
          assert.ok(at === undefined || Number.isFinite(at), `${key}: ${at}`);
        }
        assert.ok(Number.isSafeInteger(snapshot.version), String(snapshot.version));
        const ids = thrown(() => parseTaskGroup(detail.group));
        assert.equal(ids, undefined, 'the group is read without throwing');
      }),
      params,
    );
  });
});

describe('docker plan codec, fuzzed', () => {
  const identity = {
    namespace: 'ns',
    name: 'web',
    uid: '0b8f0c59-4a1e-4d36-9d61-2f0f2c8c8a11',
    node: 'vk-1',
  };
  const pod = (env: Array<{ name: string; value: string }>, command: string[]): V1Pod => ({
    metadata: identity,
    spec: {
      restartPolicy: 'OnFailure',
      terminationGracePeriodSeconds: 7,
      volumes: [{ name: 'scratch', emptyDir: { medium: 'Memory' } }],
      containers: [
        {
          name: 'app',
          image: 'busybox:1.36',
          command,
          env,
          ports: [{ containerPort: 8080, hostPort: 18080 }],
          volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 3 },
          resources: { limits: { cpu: '250m', memory: '64Mi' } },
        },
      ],
    },
  });
  const planOf = (env: Array<{ name: string; value: string }>, command: string[]) =>
    podPlan(pod(env, command), identity, 'cluster.local');

  it('reads back every plan it wrote, whatever the strings in it', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ name: fc.string({ minLength: 1 }), value: fc.string({ unit: 'binary' }) }), {
          maxLength: 4,
        }),
        fc.array(fc.string({ unit: 'binary' }), { maxLength: 4 }),
        (env, command) => {
          const plan = planOf(env, command);
          assert.deepEqual(planFromEnv(['PATH=/bin', planEnv(plan)]), plan);
        },
      ),
      params,
    );
  });

  it('reads any env (and any plan with fields changed) as a plan or as none, never an error', () => {
    const plan = planOf([{ name: 'A', value: 'b' }], ['sleep', '1']) as unknown as Record<string, unknown>;
    const fields = Object.keys(plan);
    const mutatedPlan = fc
      .array(fc.tuple(fc.constantFrom(...fields), oddValue), { minLength: 1, maxLength: 3 })
      .map((changes) => changes.reduce<unknown>((p, [field, value]) => replaced(p, [field], value), plan))
      .map((p) => `${PLAN_ENV}=${JSON.stringify(p)}`);
    const entry = fc.oneof(
      fc.string(),
      fc.string().map((s) => `${PLAN_ENV}=${s}`),
      fc.jsonValue().map((v) => `${PLAN_ENV}=${JSON.stringify(v)}`),
      mutatedPlan,
      fc.string().map((s) => `${PLAN_ENV}=${JSON.stringify(plan).slice(0, s.length)}`),
    );
    fc.assert(
      fc.property(
        fc.oneof(fc.constant(null), fc.constant(undefined), fc.array(entry, { maxLength: 3 })),
        (env) => {
          const err = thrown(() => planFromEnv(env));
          assert.equal(err, undefined, `threw ${String(err)}`);
        },
      ),
      params,
    );
  });
});
