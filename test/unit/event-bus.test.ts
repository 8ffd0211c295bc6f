import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import {
  type BusEvent,
  EventBusValidationError,
  entrySize,
  LocalEventBus,
} from '../../lib/local/event-bus.ts';
import { LocalLambdaRuntime } from '../../lib/local/lambda-runtime.ts';
import { FakeClock } from '../support/fake-clock.ts';

const NOW = Date.UTC(2026, 10, 21, 4, 46, 7, 900);
const fixedClock = new FakeClock({ wall: NOW });

function podEntry(name: string, extra: Partial<PutEventsRequestEntry> = {}): PutEventsRequestEntry {
  return {
    Source: 'svk.pod-watch',
    DetailType: 'PodChanged',
    Detail: JSON.stringify({ key: `default/${name}`, node: 'vk-1' }),
    ...extra,
  };
}

/** A bus with one rule whose target records the pod keys it is handed, in the order it is handed them. */
function busWithRecorder(options: ConstructorParameters<typeof LocalEventBus>[0] = {}) {
  const bus = new LocalEventBus({ clock: fixedClock, ...options });
  const received: BusEvent[] = [];
  bus.addRule({
    name: 'pod-sync',
    pattern: { source: ['svk.pod-watch'], 'detail-type': ['PodChanged'] },
    target: async (event) => void received.push(event),
  });
  const keys = () => received.map((e) => e.detail.key);
  return { bus, received, keys };
}

describe('LocalEventBus.putEvents', () => {
  it('delivers, after putEvents returns, the exact envelope EventBridge gives a Lambda target', async () => {
    const { bus, received } = busWithRecorder();
    const result = await bus.putEvents([
      podEntry('a', { Resources: ['arn:aws:eks:us-east-1:000000000000:cluster/c'] }),
      podEntry('b', { Time: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)) }),
    ]);
    assert.equal(received.length, 0, 'delivery is asynchronous');
    assert.equal(result.FailedEntryCount, 0);
    assert.equal(result.Entries.length, 2);
    await bus.whenIdle();
    assert.equal(received.length, 2);
    const [a, b] = received;
    assert.deepEqual(a, {
      version: '0',
      id: result.Entries[0]?.EventId,
      'detail-type': 'PodChanged',
      source: 'svk.pod-watch',
      account: '000000000000',
      time: '2026-11-21T04:46:07Z',
      region: 'us-east-1',
      resources: ['arn:aws:eks:us-east-1:000000000000:cluster/c'],
      detail: { key: 'default/a', node: 'vk-1' },
    });
    assert.deepEqual(Object.keys(a ?? {}), [
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
    assert.equal(b?.time, '2026-01-02T03:04:05Z');
    assert.deepEqual(b?.resources, []);
    assert.deepEqual(
      bus.deliveries.map((d) => [d.rule, d.status, d.attempt]),
      [
        ['pod-sync', 'delivered', 1],
        ['pod-sync', 'delivered', 1],
      ],
    );
  });

  it('rejects a call with more than 10 entries, or none, as a whole', async () => {
    const { bus, received } = busWithRecorder();
    const eleven = Array.from({ length: 11 }, (_, i) => podEntry(`p${i}`));
    await assert.rejects(bus.putEvents(eleven), (error: unknown) => {
      assert.ok(error instanceof EventBusValidationError);
      assert.equal(error.name, 'ValidationException');
      assert.match(error.message, /Member must have length less than or equal to 10/);
      return true;
    });
    await assert.rejects(bus.putEvents([]), /greater than or equal to 1/);
    await assert.rejects(bus.putEvents(undefined), EventBusValidationError);
    const ten = await bus.putEvents(eleven.slice(0, 10));
    assert.equal(ten.FailedEntryCount, 0);
    await bus.whenIdle();
    assert.equal(received.length, 10);
  });

  it('measures entries as AWS does and rejects a request over the size limit as a whole', async () => {
    const entry = { Source: 'é', DetailType: 'dt', Detail: '{}', Resources: ['r1', 'r22'], Time: new Date() };
    assert.equal(entrySize(entry), 14 + 2 + 2 + 2 + 2 + 3);
    const { bus, received } = busWithRecorder({ maxRequestBytes: 1_000 });
    const detailOf = (bytes: number) => JSON.stringify({ pad: 'x'.repeat(bytes - 10) });
    const fits = podEntry('fits', { Detail: detailOf(500) });
    const big = podEntry('big', { Detail: detailOf(700) });
    assert.equal(entrySize(fits) + entrySize(big) > 1_000, true);
    await assert.rejects(
      bus.putEvents([fits, big]),
      /Total size of the entries in the request is over the limit/,
    );
    await bus.whenIdle();
    assert.equal(received.length, 0, 'nothing of a rejected request is delivered');
    assert.equal((await bus.putEvents([fits])).FailedEntryCount, 0);
    assert.equal(new LocalEventBus().retries, 0);
  });

  it('fails bad entries one by one and delivers the others', async () => {
    const { bus, keys } = busWithRecorder();
    const result = await bus.putEvents([
      podEntry('ok-1'),
      { DetailType: 'PodChanged', Detail: '{}' },
      podEntry('x', { Detail: 'not json' }),
      podEntry('x', { Detail: '[1]' }),
      podEntry('x', { Source: 'aws.events' }),
      podEntry('ok-2'),
    ]);
    assert.equal(result.FailedEntryCount, 4);
    assert.deepEqual(
      result.Entries.map((e) => e.ErrorCode ?? 'ok'),
      [
        'ok',
        'InvalidArgument',
        'MalformedDetail',
        'MalformedDetail',
        'NotAuthorizedForSourceException',
        'ok',
      ],
    );
    assert.match(result.Entries[1]?.ErrorMessage ?? '', /Source is a required argument/);
    await bus.whenIdle();
    assert.deepEqual(keys(), ['default/ok-1', 'default/ok-2']);
  });

  it('injects per-entry failures so that a publisher resends only the failed entries', async () => {
    const { bus, keys } = busWithRecorder();
    let failuresLeft = 1;
    bus.failEntries((entry) => entry.Detail?.includes('default/b') === true && failuresLeft-- > 0);
    const entries = [podEntry('a'), podEntry('b'), podEntry('c')];
    const first = await bus.putEvents(entries);
    assert.equal(first.FailedEntryCount, 1);
    assert.equal(first.Entries[1]?.ErrorCode, 'InternalFailure');
    assert.equal(first.Entries[1]?.EventId, undefined);
    const resend = entries.filter((_, i) => first.Entries[i]?.ErrorCode);
    const second = await bus.putEvents(resend);
    assert.equal(second.FailedEntryCount, 0);
    await bus.whenIdle();
    assert.deepEqual(keys().sort(), ['default/a', 'default/b', 'default/c']);
    bus.failEntries(() => true, 'ThrottlingException');
    assert.equal((await bus.putEvents([podEntry('d')])).Entries[0]?.ErrorCode, 'ThrottlingException');
    bus.failEntries(undefined);
    assert.equal((await bus.putEvents([podEntry('d')])).FailedEntryCount, 0);
  });
});

describe('LocalEventBus delivery faults', () => {
  it('delivers each event twice with the same id when told to duplicate', async () => {
    const { bus, received } = busWithRecorder();
    bus.duplicate = 2;
    const result = await bus.putEvents([podEntry('a'), podEntry('b')]);
    await bus.whenIdle();
    assert.equal(received.length, 4);
    const ids = result.Entries.map((e) => e.EventId);
    assert.deepEqual(received.map((e) => e.id).sort(), [...ids, ...ids].sort());
    assert.notEqual(received[0], received[1], 'each delivery is its own copy');
  });

  it('starts a batch in reverse or shuffled order', async () => {
    const { bus, keys, received } = busWithRecorder({ random: () => 0 });
    const batch = ['a', 'b', 'c', 'd'].map((n) => podEntry(n));
    bus.reorder = 'reverse';
    await bus.putEvents(batch);
    await bus.whenIdle();
    assert.deepEqual(keys(), ['default/d', 'default/c', 'default/b', 'default/a']);
    received.length = 0;
    bus.reorder = 'shuffle';
    await bus.putEvents(batch);
    await bus.whenIdle();
    assert.deepEqual(keys(), ['default/b', 'default/c', 'default/d', 'default/a']);
  });

  it('holds deliveries across batches and releases them in reverse', async () => {
    const { bus, keys } = busWithRecorder();
    bus.hold();
    await bus.putEvents([podEntry('first')]);
    await bus.putEvents([podEntry('second')]);
    await bus.whenIdle();
    assert.deepEqual(keys(), []);
    assert.equal(bus.heldCount, 2);
    bus.release({ order: 'reverse' });
    await bus.whenIdle();
    assert.deepEqual(keys(), ['default/second', 'default/first']);
  });

  it('drops the deliveries a predicate picks', async () => {
    const { bus, keys } = busWithRecorder();
    bus.drop((event) => event.detail.key === 'default/lost');
    await bus.putEvents([podEntry('lost'), podEntry('kept')]);
    await bus.whenIdle();
    assert.deepEqual(keys(), ['default/kept']);
    assert.deepEqual(
      bus.deliveries.map((d) => d.status),
      ['dropped', 'delivered'],
    );
  });

  it('retries as deployed: the retries one and two minutes apart, then the dead letter; none past the maximum age', async () => {
    const clock = new FakeClock({ wall: NOW, autoAdvance: true });
    const policy = { retries: 2, retryDelaysMs: [60_000, 120_000], maxEventAgeMs: 3_600_000 };
    const bus = new LocalEventBus({ clock, retries: 20, retryDelayMs: 1_000, retryPolicy: policy });
    const attempts: number[] = [];
    bus.addRule({
      name: 'pod-sync',
      pattern: { source: ['svk.pod-watch'] },
      target: async () => {
        attempts.push(clock.monotonic());
        throw new Error('pod-sync failed');
      },
    });
    await bus.putEvents([podEntry('broken')]);
    await bus.whenIdle();
    assert.deepEqual(attempts, [0, 60_000, 180_000], 'three attempts, the policy not retries/retryDelayMs');
    assert.equal(bus.deadLetters[0]?.attempts, 3);

    const young = new FakeClock({ wall: NOW, autoAdvance: true });
    const aging = new LocalEventBus({ clock: young, retryPolicy: { ...policy, maxEventAgeMs: 90_000 } });
    let tries = 0;
    aging.addRule({
      name: 'pod-sync',
      pattern: { source: ['svk.pod-watch'] },
      target: async () => {
        tries++;
        throw new Error('pod-sync failed');
      },
    });
    await aging.putEvents([podEntry('old')]);
    await aging.whenIdle();
    assert.equal(tries, 2, 'the second retry would come 180 s after acceptance, past the 90 s maximum age');
    assert.equal(aging.deadLetters[0]?.attempts, 2);
  });

  it('retries a failing target, then dead-letters the event', async () => {
    const bus = new LocalEventBus({ clock: fixedClock, retries: 2 });
    const attempts: string[] = [];
    let flakyFailures = 1;
    bus.addRule({
      name: 'pod-sync',
      pattern: { source: ['svk.pod-watch'] },
      target: async (event) => {
        const key = String(event.detail.key);
        attempts.push(key);
        if (key === 'default/broken') throw new Error('pod-sync failed');
        if (key === 'default/flaky' && flakyFailures-- > 0) throw new Error('transient');
      },
    });
    await bus.putEvents([podEntry('broken'), podEntry('flaky')]);
    await bus.whenIdle();
    assert.equal(attempts.filter((k) => k === 'default/broken').length, 3);
    assert.equal(attempts.filter((k) => k === 'default/flaky').length, 2);
    assert.equal(bus.deadLetters.length, 1);
    assert.equal(bus.deadLetters[0]?.event.detail.key, 'default/broken');
    assert.equal(bus.deadLetters[0]?.attempts, 3);
    assert.match(String(bus.deadLetters[0]?.error), /pod-sync failed/);
  });

  it('dead-letters at once with the default of no retries, and routes only matching events', async () => {
    const bus = new LocalEventBus({ clock: fixedClock });
    bus.addRule({
      name: 'other',
      pattern: { 'detail-type': ['NodeChanged'] },
      target: async () => assert.fail('must not match'),
    });
    bus.addRule({
      name: 'pod-sync',
      pattern: { source: ['svk.pod-watch'] },
      target: async () => {
        throw new Error('down');
      },
    });
    await bus.putEvents([podEntry('a')]);
    await bus.whenIdle();
    assert.deepEqual(
      bus.deadLetters.map((d) => [d.rule, d.attempts]),
      [['pod-sync', 1]],
    );
  });

  it('invokes a Lambda function through the runtime, which sees the envelope as its event', async () => {
    const runtime = new LocalLambdaRuntime();
    const seen: unknown[] = [];
    runtime.register({
      name: 'pod-sync',
      timeoutMs: 1_000,
      handler: async (event: BusEvent) => {
        seen.push(event);
        if (event.detail.key === 'default/bad') throw new Error('reconcile failed');
      },
    });
    const bus = new LocalEventBus();
    bus.addRule({
      name: 'pod-sync',
      pattern: { source: ['svk.pod-watch'] },
      target: runtime.asTarget('pod-sync'),
    });
    await bus.putEvents([podEntry('good'), podEntry('bad')]);
    await bus.whenIdle();
    assert.equal(seen.length, 2);
    assert.deepEqual(
      bus.deadLetters.map((d) => d.event.detail.key),
      ['default/bad'],
    );
  });

  it('delivers to a function at its reserved concurrency without failures: the events wait their turn', async () => {
    const runtime = new LocalLambdaRuntime();
    let active = 0;
    let maxActive = 0;
    const started: string[] = [];
    runtime.register({
      name: 'pod-sync',
      timeoutMs: 10_000,
      reservedConcurrency: 3,
      handler: async (event: BusEvent) => {
        started.push(String(event.detail.key));
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise((resolve) => setTimeout(resolve, 5));
        active--;
      },
    });
    const bus = new LocalEventBus({ retries: 2 });
    bus.addRule({
      name: 'pod-sync',
      pattern: { source: ['svk.pod-watch'] },
      target: runtime.asTarget('pod-sync'),
    });
    const names = Array.from({ length: 20 }, (_, i) => `p${i}`);
    for (let i = 0; i < names.length; i += 10) {
      await bus.putEvents(names.slice(i, i + 10).map((name) => podEntry(name)));
    }
    await bus.whenIdle();
    assert.equal(maxActive, 3);
    assert.deepEqual(
      started,
      names.map((name) => `default/${name}`),
      'first in, first started',
    );
    assert.deepEqual(
      bus.deliveries.map((d) => `${d.status}/${d.attempt}`),
      names.map(() => 'delivered/1'),
    );
    assert.equal(bus.deadLetters.length, 0);
    assert.equal(runtime.queuedCount('pod-sync'), 0);
  });

  it('dead-letters at once, without retries, what the target fails as not retryable', async () => {
    const { bus } = busWithRecorder({ retries: 3 });
    const gone = Object.assign(new Error('function not found'), { retryable: false });
    bus.addRule({
      name: 'gone',
      pattern: { source: ['svk.pod-watch'] },
      target: async () => {
        throw gone;
      },
    });
    await bus.putEvents([podEntry('a')]);
    await bus.whenIdle();
    assert.deepEqual(
      bus.deliveries.filter((d) => d.rule === 'gone').map((d) => [d.status, d.attempt]),
      [['failed', 1]],
    );
    assert.deepEqual(
      bus.deadLetters.map((d) => [d.rule, d.attempts, d.error]),
      [['gone', 1, gone]],
    );
  });

  it('dead-letters the queued events of a runtime stopped with abortRunning, and goes idle', async () => {
    const runtime = new LocalLambdaRuntime();
    const started: string[] = [];
    runtime.register({
      name: 'pod-sync',
      timeoutMs: 60_000,
      reservedConcurrency: 1,
      handler: async (event: BusEvent) => {
        started.push(String(event.detail.key));
        return new Promise(() => {});
      },
    });
    const bus = new LocalEventBus({ retries: 5 });
    bus.addRule({
      name: 'pod-sync',
      pattern: { source: ['svk.pod-watch'] },
      target: runtime.asTarget('pod-sync'),
    });
    await bus.putEvents(['a', 'b', 'c'].map((name) => podEntry(name)));
    while (started.length === 0) await new Promise((resolve) => setImmediate(resolve));
    await runtime.stopAll({ abortRunning: true });
    await bus.whenIdle();
    assert.deepEqual(started, ['default/a']);
    // The crashed one is retried into the stopped runtime once, then dead-lettered like the queued ones.
    assert.deepEqual(
      bus.deadLetters
        .map((d) => [String(d.event.detail.key), d.attempts, (d.error as Error).name] as const)
        .sort(([a], [b]) => a.localeCompare(b)),
      [
        ['default/a', 2, 'FunctionStoppedError'],
        ['default/b', 1, 'FunctionStoppedError'],
        ['default/c', 1, 'FunctionStoppedError'],
      ],
    );
  });
});
