import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type Dependencies, loadDependencies } from '../../lib/app/dependencies.ts';
import { ConfigError } from '../../lib/config/config.ts';
import {
  InvalidEventError,
  parseScheduledEvent,
  type ScheduledEvent,
} from '../../lib/events/scheduled-event.ts';
import { lambdaHandler } from '../../lib/handler/lambda-handler.ts';
import { type Invocation, invocationLog } from '../../lib/invocation.ts';
import { createLambdaContext, scheduledEvent } from '../../lib/local/lambda-context.ts';
import { EmfMetrics } from '../../lib/metrics/emf.ts';

// Nothing here reaches a server: building the dependencies opens no connection,
// and these handlers run without the release gate (which reads DynamoDB; the
// integration tests cover it).
const dir = mkdtempSync(join(tmpdir(), 'svk-handler-'));
const kubeconfig = join(dir, 'kubeconfig');
writeFileSync(
  kubeconfig,
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:9' } }],
    users: [{ name: 'u', user: { token: 'unused' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  }),
);
after(() => rmSync(dir, { recursive: true, force: true }));

const env = {
  SVK_KUBECONFIG: kubeconfig,
  SVK_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
  AWS_REGION: 'local',
  SVK_TABLE_NAME: 'unit',
  SVK_LOG_LEVEL: 'silent',
};

interface Call {
  deps: Dependencies;
  invocation: Invocation;
  event: ScheduledEvent;
}

function recordingHandler(handlerEnv: Record<string, string>) {
  const calls: Call[] = [];
  const handler = lambdaHandler(
    { env: handlerEnv, dependencies: loadDependencies, event: parseScheduledEvent, gate: false },
    async (deps, invocation, event) => {
      calls.push({ deps, invocation, event });
      return 'done';
    },
  );
  return { calls, handler };
}

const context = (requestId: string) =>
  createLambdaContext({ functionName: 'unit', timeoutMs: 10_000, requestId });

describe('lambdaHandler', () => {
  it('builds the dependencies once per cold start and hands the entry point the parsed event', async () => {
    const { calls, handler } = recordingHandler(env);
    const event = scheduledEvent();
    assert.equal(await handler(event, context('r1')), 'done');
    assert.equal(await handler(event, context('r2')), 'done');
    assert.equal(calls.length, 2);
    assert.equal(calls[0]?.deps, calls[1]?.deps, 'one set of dependencies for both invocations');
    assert.deepEqual(
      calls.map((c) => c.invocation.requestId),
      ['r1', 'r2'],
    );
    assert.equal(calls[0]?.event['detail-type'], 'Scheduled Event');
  });

  it('reports ColdStart (value 1, by function) on the first invocation of the environment only', async () => {
    const lines: string[] = [];
    const metrics = new EmfMetrics({ deployment: 'svk-unit', write: (line) => lines.push(line) });
    const handler = lambdaHandler(
      {
        env,
        dependencies: (config, overrides) => loadDependencies(config, { ...overrides, metrics }),
        event: parseScheduledEvent,
        gate: false,
      },
      async () => 'done',
    );
    await handler(scheduledEvent(), context('cold'));
    await handler(scheduledEvent(), context('warm-1'));
    await handler(scheduledEvent(), context('warm-2'));
    const docs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      docs.map((d) => [d.ColdStart, d.function_name, d.service, d.Deployment]),
      [[1, 'unit', 'serverless-virtual-kubelet', 'svk-unit']],
    );
  });

  it('rejects an event its parser refuses before the entry point runs', async () => {
    const { calls, handler } = recordingHandler(env);
    await assert.rejects(handler({ source: 'someone.else' }, context('bad')), InvalidEventError);
    assert.equal(calls.length, 0);
  });

  it('fails every invocation while the configuration is bad, before the entry point runs', async () => {
    const { calls, handler } = recordingHandler({ ...env, SVK_NODE_NAMES: 'Bad_Node' });
    await assert.rejects(handler(scheduledEvent(), context('c1')), ConfigError);
    await assert.rejects(handler(scheduledEvent(), context('c2')), ConfigError);
    assert.equal(calls.length, 0);
  });

  it('logs the Lambda fields under Powertools names: cold_start true on the first invocation, false on the next', async () => {
    const handlerEnv: Record<string, string> = {
      ...env,
      SVK_LOG_LEVEL: 'info',
      SVK_SERVICE_NAME: 'svk-unit',
      _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=557abcec3ee5a047;Sampled=1',
    };
    const handler = lambdaHandler(
      { env: handlerEnv, dependencies: loadDependencies, event: parseScheduledEvent, gate: false },
      async (deps, invocation) => {
        invocationLog(deps.log, invocation).child({ node: 'vk-1' }).info('hello');
        return 'done';
      },
    );
    const written: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array) => {
      written.push(...String(chunk).split('\n').filter(Boolean));
      return true;
    }) as typeof process.stdout.write;
    try {
      await handler(scheduledEvent(), context('r1'));
      handlerEnv._X_AMZN_TRACE_ID = 'Root=1-5759e988-00000000000000000000000b;Sampled=0';
      await handler(scheduledEvent(), context('r2'));
    } finally {
      process.stdout.write = write;
    }
    const lines = written
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'hello')
      .map(({ time, ...rest }) => rest);
    const common = {
      level: 'INFO',
      service: 'svk-unit',
      function_name: 'unit',
      function_arn: 'arn:aws:lambda:us-east-1:000000000000:function:unit',
      function_memory_size: 256,
      node: 'vk-1',
      msg: 'hello',
    };
    assert.deepEqual(lines, [
      {
        ...common,
        cold_start: true,
        function_request_id: 'r1',
        xray_trace_id: '1-5759e988-bd862e3fe1be46a994272793',
      },
      {
        ...common,
        cold_start: false,
        function_request_id: 'r2',
        xray_trace_id: '1-5759e988-00000000000000000000000b',
      },
    ]);
  });
});
