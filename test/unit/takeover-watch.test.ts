import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TakeoverWatch } from '../../bench/takeovers.ts';
import type { DynamoRequest } from '../support/fault-proxies.ts';

const POD = { pk: { S: 'pods#node-a' }, sk: { S: 'ns/p1' } };
const LOCK = { pk: { S: 'lock#heartbeat' }, sk: { S: 'lock' } };

/** A claim as KnownPodStore.claim writes it (the wire format the proxy sees). */
function claim(token: string, owner: string, until = 'x'): DynamoRequest {
  return {
    operation: 'UpdateItem',
    body: {
      Key: POD,
      UpdateExpression: 'SET #uid = :uid, #claim = :claim, #v = :next',
      ExpressionAttributeValues: {
        ':claim': { M: { token: { S: token }, owner: { S: owner }, hash: { S: 'h' }, until: { S: until } } },
      },
    },
  };
}

/** completeClaim: the claim dropped on the condition that `token` holds it. */
function complete(token: string): DynamoRequest {
  return {
    operation: 'UpdateItem',
    body: {
      Key: POD,
      UpdateExpression: 'SET #applied = :applied, #v = #v + :one REMOVE #claim, #push',
      ConditionExpression: '#claim.#token = :token',
      ExpressionAttributeValues: { ':token': { S: token } },
    },
  };
}

/** markTerminating: drops an (expired, by its writer's clock) claim without its token. */
const terminating: DynamoRequest = {
  operation: 'UpdateItem',
  body: {
    Key: POD,
    UpdateExpression: 'SET #due = :due, #v = :next REMOVE #claim, #handoff',
    ExpressionAttributeValues: { ':due': { S: 'x' } },
  },
};

function lockPut(owner: string | undefined, updatedAt = 'x'): DynamoRequest {
  return {
    operation: 'PutItem',
    body: {
      Item: {
        ...LOCK,
        ...(owner ? { owner: { S: owner } } : {}),
        ttlMs: { N: '15000' },
        updatedAt: { S: updatedAt },
      },
    },
  };
}

function watch(): { w: TakeoverWatch; at: (ms: number) => void } {
  let now = 0;
  return { w: new TakeoverWatch(30_000, () => now), at: (ms) => (now = ms) };
}

describe('claims and locks taken over, from the writes the DynamoDB proxy sees', () => {
  it('a claim completed by its holder is not taken; one claimed again before that is, early within the period', () => {
    const { w, at } = watch();
    w.observe(claim('t1', 'a'), 200);
    at(1_000);
    w.observe(complete('t1'), 200);
    w.observe(claim('t2', 'b'), 200);
    at(11_000);
    w.observe(claim('t3', 'c'), 200);
    at(51_000);
    w.observe(claim('t4', 'd'), 200);
    assert.equal(w.claims, 4);
    assert.deepEqual(
      w.takeovers.map((t) => [t.kind, t.from, t.to, t.afterMs, t.early]),
      [
        ['claim', 'b', 'c', 10_000, true],
        ['claim', 'c', 'd', 40_000, false],
      ],
    );
  });

  it('a claim dropped without its token is taken; a refused write takes nothing', () => {
    const { w, at } = watch();
    w.observe(claim('t1', 'a'), 200);
    w.observe(claim('t2', 'b'), 400);
    at(5_000);
    w.observe(terminating, 200);
    assert.equal(w.claimsRefused, 1);
    assert.deepEqual(
      w.takeovers.map((t) => [t.from, t.to, t.afterMs]),
      [['a', 'a write without its token', 5_000]],
    );
  });

  it('the same owner claiming again takes nothing from anyone', () => {
    const { w } = watch();
    w.observe(claim('t1', 'a'), 200);
    w.observe(claim('t2', 'a'), 200);
    assert.deepEqual(w.takeovers, []);
  });

  it("a lock passes to another owner: taken over unless released; early before the holder's TTL", () => {
    const { w, at } = watch();
    w.observe(lockPut('a'), 200);
    at(10_000);
    w.observe(lockPut('a'), 200);
    at(20_000);
    w.observe(lockPut('b'), 200);
    w.observe(lockPut(undefined), 200);
    w.observe(lockPut('c'), 200);
    at(50_000);
    w.observe(lockPut('d'), 200);
    assert.deepEqual(
      w.takeovers.map((t) => [t.kind, t.key, t.from, t.to, t.afterMs, t.early]),
      [
        ['lock', 'lock#heartbeat|lock', 'a', 'b', 10_000, true],
        ['lock', 'lock#heartbeat|lock', 'c', 'd', 30_000, false],
      ],
    );
  });

  it("counts the writes by how their stamp stood against the true clock: a claim's until less its period, a lock's updatedAt", () => {
    const { w, at } = watch();
    const iso = (ms: number) => new Date(ms).toISOString();
    at(100_000);
    w.observe(claim('t1', 'a', iso(100_000 + 30_000 + 15_000)), 200);
    w.observe(complete('t1'), 200);
    w.observe(claim('t2', 'b', iso(100_000 + 30_000 - 15_000)), 200);
    w.observe(lockPut('a', iso(100_000 + 1_000)), 200);
    w.observe(lockPut('a', iso(100_000 - 15_000)), 200);
    w.observe(lockPut('a', iso(100_000 - 15_000)), 400);
    assert.deepEqual(w.stamps, { ahead: 1, behind: 2, onTime: 1 });
    assert.equal(w.lockWritesRefused, 1);
    at(100_100);
    w.observe(claim('t3', 'c', iso(100_100 + 30_000 + 15_000)), 200);
    assert.deepEqual(
      w.takeovers.map((t) => [t.from, t.to, t.afterMs, t.early, t.fromClockMs, t.toClockMs]),
      [['b', 'c', 100, true, -15_000, 15_000]],
    );
  });
});
