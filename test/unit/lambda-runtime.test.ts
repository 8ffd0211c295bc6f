import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { currentDeadline, runWithDeadline } from '../../lib/deadline.ts';
import {
  createLambdaContext,
  FunctionStoppedError,
  guardDependency,
  InvocationAbortedError,
  invocationSignal,
  LambdaTimeoutError,
  LocalLambdaRuntime,
  SandboxCrashedError,
  scheduledEvent,
} from '../../lib/local/lambda-runtime.ts';
import { FakeClock } from '../support/fake-clock.ts';

const START = Date.UTC(2026, 10, 21, 4, 46, 0, 250);

/** Resolves when `predicate` holds, checking on every turn of the event loop; fails after `ms`. */
async function until(predicate: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A handler that waits until the test releases it, recording what it saw. */
function gatedHandler() {
  const seen: { event: unknown; context: Context }[] = [];
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    seen,
    open: () => open(),
    handler: async (event: { n?: number }, context: Context) => {
      seen.push({ event, context });
      await gate;
      return { n: event.n, requestId: context.awsRequestId };
    },
  };
}

describe('createLambdaContext', () => {
  it('has the fields of a Node.js Lambda context and counts down to the deadline', async () => {
    const clock = new FakeClock({ wall: START });
    const context = createLambdaContext({
      functionName: 'heartbeat',
      timeoutMs: 60_000,
      memoryMb: 512,
      clock,
    });
    assert.match(
      context.awsRequestId,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    assert.equal(context.functionName, 'heartbeat');
    assert.equal(context.functionVersion, '$LATEST');
    assert.equal(context.invokedFunctionArn, 'arn:aws:lambda:us-east-1:000000000000:function:heartbeat');
    assert.equal(context.memoryLimitInMB, '512');
    assert.equal(context.logGroupName, '/aws/lambda/heartbeat');
    assert.match(context.logStreamName, /^2026\/11\/21\/\[\$LATEST\][0-9a-f]{32}$/);
    assert.equal(context.callbackWaitsForEmptyEventLoop, true);
    assert.equal(context.getRemainingTimeInMillis(), 60_000);
    await clock.advance(45_500);
    assert.equal(context.getRemainingTimeInMillis(), 14_500);
    await clock.advance(20_000);
    assert.equal(context.getRemainingTimeInMillis(), 0);
    assert.throws(() => context.succeed('x'), /deprecated/);
    assert.throws(() => context.fail('x'), /deprecated/);
    assert.throws(() => context.done(), /deprecated/);
    assert.equal(invocationSignal(context), undefined);
  });

  it('takes a given request id and region, and exposes the signal without serialising it', () => {
    const signal = new AbortController().signal;
    const context = createLambdaContext({
      functionName: 'pod-sync',
      timeoutMs: 1_000,
      requestId: 'req-1',
      region: 'eu-west-1',
      signal,
    });
    assert.equal(context.awsRequestId, 'req-1');
    assert.equal(context.invokedFunctionArn, 'arn:aws:lambda:eu-west-1:000000000000:function:pod-sync');
    assert.equal(invocationSignal(context), signal);
    assert.doesNotMatch(JSON.stringify(context), /signal/i);
  });
});

describe('scheduledEvent', () => {
  it('has exactly the shape of an EventBridge schedule rule event', () => {
    const event = scheduledEvent({ ruleName: 'heartbeat-schedule', time: START, id: 'e-1' });
    assert.deepEqual(event, {
      version: '0',
      id: 'e-1',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '000000000000',
      time: '2026-11-21T04:46:00Z',
      region: 'us-east-1',
      resources: ['arn:aws:events:us-east-1:000000000000:rule/heartbeat-schedule'],
      detail: {},
    });
    assert.deepEqual(Object.keys(event), [
      'version',
      'id',
      'detail-type',
      'source',
      'account',
      'time',
      'region',
      'resources',
      'detail',
    ]);
    const byArn = scheduledEvent({
      ruleArn: 'arn:aws:events:eu-west-1:123456789012:rule/r',
      region: 'eu-west-1',
    });
    assert.deepEqual(byArn.resources, ['arn:aws:events:eu-west-1:123456789012:rule/r']);
    assert.match(byArn.id, /^[0-9a-f-]{36}$/);
  });
});

describe('LocalLambdaRuntime', () => {
  it('invokes the handler with a JSON copy of the event and returns a JSON copy of its result', async () => {
    const runtime = new LocalLambdaRuntime();
    const event = { a: 1, when: new Date(START) };
    let received: unknown;
    runtime.register({
      name: 'echo',
      timeoutMs: 1_000,
      handler: async (e: unknown, context: Context) => {
        received = e;
        return { requestId: context.awsRequestId, skipped: undefined };
      },
    });
    const invocation = runtime.invoke('echo', event, { requestId: 'req-echo' });
    assert.deepEqual(await invocation.done, { status: 'ok', result: { requestId: 'req-echo' } });
    assert.deepEqual(received, { a: 1, when: '2026-11-21T04:46:00.250Z' });
    assert.notEqual(received, event);
    assert.equal(runtime.runningCount('echo'), 0);
  });

  it('runs a middy handler, whose early-timeout sees the context deadline', async () => {
    // Declared apart, as a functions/ module exports them.
    const middyOk = middy<{ v: number }, unknown>().handler(async (event, context) => ({
      v: event.v,
      fn: context.functionName,
    }));
    const middyEarly = middy<unknown, unknown>({
      timeoutEarlyInMillis: 150,
      timeoutEarlyResponse: () => 'gave up early',
    }).handler(() => new Promise(() => {}));
    const runtime = new LocalLambdaRuntime();
    runtime.register({ name: 'middy-ok', timeoutMs: 1_000, handler: middyOk });
    runtime.register({ name: 'middy-early', timeoutMs: 200, handler: middyEarly });
    assert.deepEqual(await runtime.invoke('middy-ok', { v: 1 }).done, {
      status: 'ok',
      result: { v: 1, fn: 'middy-ok' },
    });
    assert.deepEqual(await runtime.invoke('middy-early', {}).done, { status: 'ok', result: 'gave up early' });
  });

  it("starts an invocation outside its caller's deadline scope", async () => {
    const runtime = new LocalLambdaRuntime();
    const seen: (AbortSignal | undefined)[] = [];
    runtime.register({
      name: 'deadline',
      timeoutMs: 1_000,
      handler: async () => {
        seen.push(currentDeadline());
        return {};
      },
    });
    // As when one invocation's code (a bus delivery) starts another: the caller's deadline stays its own.
    const callerDeadline = AbortSignal.abort(new Error('the caller reached its deadline'));
    const invocation = runWithDeadline(callerDeadline, () => runtime.invoke('deadline', {}));
    assert.deepEqual(await invocation.done, { status: 'ok', result: {} });
    assert.deepEqual(seen, [undefined]);
  });

  it('reports a thrown error as status error', async () => {
    const runtime = new LocalLambdaRuntime();
    runtime.register({
      name: 'fails',
      timeoutMs: 1_000,
      handler: async () => {
        throw new RangeError('bad pod key');
      },
    });
    const result = await runtime.invoke('fails', {}).done;
    assert.equal(result.status, 'error');
    assert.ok(result.status === 'error' && result.error instanceof RangeError);
  });

  it('runs several invocations of one function at once', async () => {
    const runtime = new LocalLambdaRuntime();
    const gate = gatedHandler();
    runtime.register({ name: 'pod-sync', timeoutMs: 5_000, handler: gate.handler });
    const invocations = [1, 2, 3].map((n) => runtime.invoke('pod-sync', { n }));
    await until(() => gate.seen.length === 3);
    assert.equal(runtime.runningCount('pod-sync'), 3);
    assert.equal(new Set(gate.seen.map((s) => s.context.awsRequestId)).size, 3);
    gate.open();
    const results = await Promise.all(invocations.map((i) => i.done));
    assert.deepEqual(
      results.map((r) => r.status === 'ok' && r.result),
      invocations.map((i, k) => ({ n: k + 1, requestId: i.requestId })),
    );
    assert.equal(runtime.runningCount('pod-sync'), 0);
  });

  it('times out at the deadline: the caller sees timeout, the signal aborts, guarded dependencies refuse', async () => {
    const clock = new FakeClock({ wall: START });
    const runtime = new LocalLambdaRuntime({ clock });
    const writes: string[] = [];
    const store = guardDependency({ write: async (what: string) => void writes.push(what) });
    let signal: AbortSignal | undefined;
    let afterAbort: unknown;
    let proceed: () => void = () => {};
    runtime.register({
      name: 'heartbeat',
      timeoutMs: 60_000,
      handler: async (_event: unknown, context: Context) => {
        signal = invocationSignal(context);
        await store.write('before');
        await new Promise<void>((resolve) => {
          proceed = resolve;
        });
        afterAbort = await store.write('after').catch((error: unknown) => error);
        return 'late result';
      },
    });
    const invocation = runtime.invoke('heartbeat', scheduledEvent({ time: clock.now() }));
    await until(() => writes.length === 1);
    await clock.advance(59_999);
    assert.equal(runtime.runningCount('heartbeat'), 1);
    assert.equal(signal?.aborted, false);
    await clock.advance(1);
    const result = await invocation.done;
    assert.equal(result.status, 'timeout');
    assert.ok(result.status === 'timeout' && result.error instanceof LambdaTimeoutError);
    assert.equal(result.status === 'timeout' && result.error.message, 'Task timed out after 60.00 seconds');
    assert.equal(signal?.aborted, true);
    assert.equal(invocation.context.getRemainingTimeInMillis(), 0);
    assert.equal(runtime.runningCount('heartbeat'), 0);
    // The handler runs on, as a promise cannot be killed, but its writes are cut off.
    proceed();
    await until(() => afterAbort !== undefined);
    assert.ok(afterAbort instanceof InvocationAbortedError);
    assert.deepEqual(writes, ['before']);
    // Outside any invocation the dependency still works (test assertions, setup).
    await store.write('test setup');
    assert.deepEqual(writes, ['before', 'test setup']);
  });

  it('times out on the real clock too', async () => {
    const runtime = new LocalLambdaRuntime();
    runtime.register({
      name: 'slow',
      timeoutMs: 50,
      handler: (_event: unknown, context: Context) =>
        new Promise((resolve) =>
          invocationSignal(context)?.addEventListener('abort', () => resolve('stopped')),
        ),
    });
    const invocation = runtime.invoke('slow', {});
    assert.equal((await invocation.done).status, 'timeout');
    assert.equal(invocation.signal.aborted, true);
  });

  it('crashes one invocation while the others of the same function go on', async () => {
    const clock = new FakeClock({ wall: START });
    const runtime = new LocalLambdaRuntime({ clock });
    const gate = gatedHandler();
    runtime.register({ name: 'pod-sync', timeoutMs: 30_000, handler: gate.handler });
    const first = runtime.invoke('pod-sync', { n: 1 });
    const second = runtime.invoke('pod-sync', { n: 2 });
    const third = runtime.invoke('pod-sync', { n: 3 }, { crashAfterMs: 1_000 });
    await until(() => gate.seen.length === 3);
    first.crash();
    assert.equal((await first.done).status, 'crashed');
    assert.ok(first.signal.aborted && first.signal.reason instanceof SandboxCrashedError);
    assert.equal(second.signal.aborted, false);
    await clock.advance(1_000);
    assert.equal((await third.done).status, 'crashed');
    assert.equal(runtime.runningCount('pod-sync'), 1);
    gate.open();
    assert.deepEqual(await second.done, { status: 'ok', result: { n: 2, requestId: second.requestId } });
    first.crash();
    assert.equal((await first.done).status, 'crashed');
    assert.equal(clock.sleepers(), 0, 'finished invocations leave no timers behind');
  });

  it('turns invocations into an event-bus target that resolves with the result and rejects on timeout', async () => {
    const runtime = new LocalLambdaRuntime();
    runtime.register({ name: 'ok', timeoutMs: 1_000, handler: async (e: { v: number }) => e.v * 2 });
    runtime.register({ name: 'slow', timeoutMs: 20, handler: () => new Promise(() => {}) });
    assert.equal(await runtime.asTarget('ok')({ v: 21 }), 42);
    await assert.rejects(runtime.asTarget('slow')({}), LambdaTimeoutError);
    assert.throws(() => runtime.asTarget('missing'), /no function registered as missing/);
  });

  it('fires a schedule every rate with scheduled events, and stopAll stops it and waits', async () => {
    const clock = new FakeClock({ wall: START });
    const seen: { time: string; resources: string[] }[] = [];
    const results: string[] = [];
    const runtime = new LocalLambdaRuntime({ clock, onResult: (_i, r) => results.push(r.status) });
    runtime.register({
      name: 'heartbeat',
      timeoutMs: 55_000,
      handler: async (event: { time: string; resources: string[] }) => void seen.push(event),
    });
    runtime.schedule('heartbeat', { rateMs: 60_000 });
    await clock.advance(59_000);
    assert.equal(seen.length, 0);
    await clock.advance(1_000);
    await clock.advance(60_000);
    await until(() => seen.length === 2);
    assert.deepEqual(
      seen.map((e) => e.time),
      ['2026-11-21T04:47:00Z', '2026-11-21T04:48:00Z'],
    );
    assert.deepEqual(seen[0]?.resources, ['arn:aws:events:us-east-1:000000000000:rule/heartbeat-schedule']);
    await runtime.stopAll();
    await clock.advance(120_000);
    assert.equal(seen.length, 2);
    assert.deepEqual(results, ['ok', 'ok']);
    assert.equal(clock.sleepers(), 0);
  });

  it('stopAll with abortRunning crashes what is still running', async () => {
    const runtime = new LocalLambdaRuntime();
    runtime.register({ name: 'stuck', timeoutMs: 900_000, handler: () => new Promise(() => {}) });
    const invocation = runtime.invoke('stuck', {});
    await runtime.stopAll({ abortRunning: true });
    assert.equal((await invocation.done).status, 'crashed');
  });

  it('rejects unknown functions and bad timeouts', () => {
    const runtime = new LocalLambdaRuntime();
    assert.throws(() => runtime.invoke('nope', {}), /no function registered as nope/);
    assert.throws(() => runtime.register({ name: 'x', timeoutMs: 0, handler: async () => {} }), RangeError);
  });
});

/**
 * A handler whose invocations each wait until the test finishes them by event
 * number, recording the order they started in and the most that ran at once.
 */
function throttledHandler() {
  const started: number[] = [];
  const finishers = new Map<number, () => void>();
  let active = 0;
  let maxActive = 0;
  return {
    started,
    maxActive: () => maxActive,
    finish: (n: number) => {
      const finisher = finishers.get(n);
      assert.ok(finisher, `invocation ${n} has not started`);
      finisher();
    },
    handler: async (event: { n: number }) => {
      started.push(event.n);
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        await new Promise<void>((resolve) => finishers.set(event.n, resolve));
        return event.n;
      } finally {
        active--;
      }
    },
  };
}

describe('LocalLambdaRuntime reserved concurrency', () => {
  it('runs at most reservedConcurrency asynchronous invocations, queues the others and starts them in order as slots free', async () => {
    const runtime = new LocalLambdaRuntime();
    const fn = throttledHandler();
    runtime.register({ name: 'pod-sync', timeoutMs: 30_000, reservedConcurrency: 2, handler: fn.handler });
    const results = [1, 2, 3, 4, 5, 6].map((n) => runtime.invokeAsync('pod-sync', { n }));
    await until(() => fn.started.length === 2);
    assert.deepEqual(fn.started, [1, 2]);
    assert.equal(runtime.runningCount('pod-sync'), 2);
    assert.equal(runtime.queuedCount('pod-sync'), 4);
    // Whichever finishes, the oldest queued event takes its slot.
    fn.finish(2);
    await until(() => fn.started.length === 3);
    fn.finish(1);
    await until(() => fn.started.length === 4);
    assert.deepEqual(fn.started, [1, 2, 3, 4]);
    assert.equal(runtime.queuedCount('pod-sync'), 2);
    for (const n of [4, 3, 5, 6]) {
      await until(() => fn.started.includes(n));
      fn.finish(n);
    }
    assert.deepEqual(
      (await Promise.all(results)).map((r) => r.status === 'ok' && r.result),
      [1, 2, 3, 4, 5, 6],
    );
    assert.deepEqual(fn.started, [1, 2, 3, 4, 5, 6]);
    assert.equal(fn.maxActive(), 2);
    assert.equal(runtime.runningCount('pod-sync') + runtime.queuedCount('pod-sync'), 0);
  });

  it('gives a queued invocation its full timeout only once it starts, and a timed-out one frees its slot', async () => {
    const clock = new FakeClock({ wall: START });
    const runtime = new LocalLambdaRuntime({ clock });
    const remainingAtStart: number[] = [];
    runtime.register({
      name: 'pod-sync',
      timeoutMs: 1_000,
      reservedConcurrency: 1,
      handler: (_event: unknown, context: Context) => {
        remainingAtStart.push(context.getRemainingTimeInMillis());
        return new Promise(() => {});
      },
    });
    const first = runtime.invokeAsync('pod-sync', { n: 1 });
    const second = runtime.invokeAsync('pod-sync', { n: 2 });
    await until(() => remainingAtStart.length === 1);
    await clock.advance(999);
    assert.equal(runtime.queuedCount('pod-sync'), 1, 'waiting is not running: no deadline yet');
    await clock.advance(1);
    assert.equal((await first).status, 'timeout');
    await until(() => remainingAtStart.length === 2);
    assert.deepEqual(remainingAtStart, [1_000, 1_000]);
    await clock.advance(999);
    assert.equal(runtime.runningCount('pod-sync'), 1);
    await clock.advance(1);
    assert.equal((await second).status, 'timeout');
    assert.equal(clock.sleepers(), 0);
  });

  it('frees the slot of a crashed or failed invocation for the next queued one', async () => {
    const runtime = new LocalLambdaRuntime();
    const fn = throttledHandler();
    runtime.register({ name: 'pod-sync', timeoutMs: 30_000, reservedConcurrency: 1, handler: fn.handler });
    runtime.register({
      name: 'fails',
      timeoutMs: 30_000,
      reservedConcurrency: 1,
      handler: async (event: { n: number }) => {
        if (event.n === 1) throw new Error('reconcile failed');
        return event.n;
      },
    });
    const results = [1, 2].map((n) => runtime.invokeAsync('pod-sync', { n }));
    await until(() => fn.started.length === 1);
    runtime.running('pod-sync')[0]?.crash();
    await until(() => fn.started.length === 2);
    fn.finish(2);
    assert.deepEqual(
      (await Promise.all(results)).map((r) => r.status),
      ['crashed', 'ok'],
    );
    const failing = await Promise.all([1, 2].map((n) => runtime.invokeAsync('fails', { n })));
    assert.deepEqual(
      failing.map((r) => r.status),
      ['error', 'ok'],
    );
  });

  it('copies the event when it is queued, and never throttles direct invokes, which still take a slot', async () => {
    const runtime = new LocalLambdaRuntime();
    const fn = throttledHandler();
    runtime.register({ name: 'pod-sync', timeoutMs: 30_000, reservedConcurrency: 1, handler: fn.handler });
    const direct = [1, 2].map((n) => runtime.invoke('pod-sync', { n }));
    await until(() => fn.started.length === 2);
    const event = { n: 3 };
    const queued = runtime.invokeAsync('pod-sync', event);
    event.n = 99;
    fn.finish(1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(runtime.queuedCount('pod-sync'), 1, 'one slot, still taken by invocation 2');
    fn.finish(2);
    await until(() => fn.started.length === 3);
    fn.finish(3);
    assert.deepEqual(await queued, { status: 'ok', result: 3 });
    assert.deepEqual(
      (await Promise.all(direct.map((i) => i.done))).map((r) => r.status),
      ['ok', 'ok'],
    );
  });

  it('queues the overlapping firings of a schedule only when the function sets reservedConcurrency', async () => {
    const clock = new FakeClock({ wall: START });
    const runtime = new LocalLambdaRuntime({ clock });
    const hang = () => new Promise(() => {});
    runtime.register({ name: 'limited', timeoutMs: 130_000, reservedConcurrency: 1, handler: hang });
    runtime.register({ name: 'unlimited', timeoutMs: 130_000, handler: hang });
    runtime.schedule('limited', { rateMs: 60_000, startImmediately: true });
    runtime.schedule('unlimited', { rateMs: 60_000, startImmediately: true });
    await clock.advance(60_000);
    assert.equal(runtime.runningCount('unlimited'), 2);
    assert.equal(runtime.runningCount('limited'), 1);
    assert.equal(runtime.queuedCount('limited'), 1);
    await runtime.stopAll({ abortRunning: true });
    assert.equal(clock.sleepers(), 0);
  });

  it('stopAll waits for the queued invocations to run, one slot at a time', async () => {
    const runtime = new LocalLambdaRuntime();
    const fn = throttledHandler();
    runtime.register({ name: 'pod-sync', timeoutMs: 30_000, reservedConcurrency: 1, handler: fn.handler });
    const results = [1, 2, 3].map((n) => runtime.invokeAsync('pod-sync', { n }));
    let stopped = false;
    const stopping = runtime.stopAll().then(() => {
      stopped = true;
    });
    for (const n of [1, 2]) {
      await until(() => fn.started.includes(n));
      fn.finish(n);
    }
    await until(() => fn.started.length === 3);
    assert.equal(stopped, false);
    fn.finish(3);
    await stopping;
    assert.deepEqual(
      (await Promise.all(results)).map((r) => r.status),
      ['ok', 'ok', 'ok'],
    );
  });

  it('stopAll with abortRunning crashes the running, drops the queued without starting them, and drops later ones', async () => {
    const clock = new FakeClock({ wall: START });
    const runtime = new LocalLambdaRuntime({ clock });
    const fn = throttledHandler();
    const finished: string[] = [];
    runtime.register({
      name: 'pod-sync',
      timeoutMs: 30_000,
      reservedConcurrency: 2,
      handler: fn.handler,
    });
    const unlimited = new LocalLambdaRuntime({ clock, onResult: (_i, r) => finished.push(r.status) });
    unlimited.register({ name: 'pod-sync', timeoutMs: 30_000, handler: fn.handler });
    const results = [1, 2, 3, 4, 5].map((n) => runtime.invokeAsync('pod-sync', { n }));
    await until(() => fn.started.length === 2);
    await runtime.stopAll({ abortRunning: true });
    const settled = await Promise.all(results);
    assert.deepEqual(
      settled.map((r) => r.status),
      ['crashed', 'crashed', 'dropped', 'dropped', 'dropped'],
    );
    const dropped = settled[2];
    assert.ok(dropped?.status === 'dropped' && dropped.error instanceof FunctionStoppedError);
    assert.equal(dropped.error.retryable, false);
    assert.equal(runtime.queuedCount('pod-sync'), 0);
    assert.deepEqual(fn.started, [1, 2], 'queued invocations never started');
    const late = await runtime.invokeAsync('pod-sync', { n: 6 });
    assert.equal(late.status, 'dropped');
    await assert.rejects(runtime.asTarget('pod-sync')({ n: 7 }), FunctionStoppedError);
    assert.deepEqual(fn.started, [1, 2]);
    assert.equal(clock.sleepers(), 0, 'no deadline timers left behind');
    // Another runtime is unaffected.
    const other = unlimited.invokeAsync('pod-sync', { n: 8 });
    await until(() => fn.started.includes(8));
    fn.finish(8);
    assert.equal((await other).status, 'ok');
    assert.deepEqual(finished, ['ok']);
  });

  it('rejects a reservedConcurrency that is not a positive whole number', () => {
    const runtime = new LocalLambdaRuntime();
    for (const reservedConcurrency of [0, -1, 1.5, Number.NaN]) {
      assert.throws(
        () => runtime.register({ name: 'x', timeoutMs: 1_000, reservedConcurrency, handler: async () => {} }),
        /x: reservedConcurrency must be a positive whole number/,
      );
    }
  });
});

describe('LocalLambdaRuntime in child-process mode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svk-runtime-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const module = join(dir, 'handler.ts');
  writeFileSync(
    module,
    `import type { Context } from 'aws-lambda';
export const handler = async (event: { mode: string }, context: Context) => {
  if (event.mode === 'hang') return new Promise(() => {});
  if (event.mode === 'throw') throw new TypeError('bad input');
  if (event.mode === 'exit') process.exit(3);
  return { pid: process.pid, remaining: context.getRemainingTimeInMillis() > 0, env: process.env.SVK_TEST_VALUE };
};
`,
  );

  it('runs the handler in a separate process, and kills it on crash and timeout', async () => {
    const runtime = new LocalLambdaRuntime();
    runtime.register({
      name: 'child',
      mode: 'child-process',
      module,
      timeoutMs: 20_000,
      env: { SVK_TEST_VALUE: 'v' },
    });
    runtime.register({ name: 'child-short', mode: 'child-process', module, timeoutMs: 1_000 });
    const [ok, thrown, exited] = await Promise.all(
      ['ok', 'throw', 'exit'].map((mode) => runtime.invoke('child', { mode }).done),
    );
    assert.equal(ok?.status, 'ok');
    const result =
      ok?.status === 'ok' ? (ok.result as { pid: number; remaining: boolean; env: string }) : undefined;
    assert.notEqual(result?.pid, process.pid);
    assert.equal(result?.remaining, true);
    assert.equal(result?.env, 'v');
    assert.ok(thrown?.status === 'error' && thrown.error instanceof Error);
    assert.equal(thrown.error.name, 'TypeError');
    assert.equal(thrown.error.message, 'bad input');
    assert.ok(exited?.status === 'error' && exited.error instanceof Error);
    assert.equal(exited.error.name, 'Runtime.ExitError');

    const hung = runtime.invoke('child', { mode: 'hang' });
    const timedOut = runtime.invoke('child-short', { mode: 'hang' });
    hung.crash();
    assert.equal((await hung.done).status, 'crashed');
    assert.equal((await timedOut.done).status, 'timeout');
    await runtime.stopAll();
  });
});
