/**
 * kube-apiserver goes away for 30 s under a running heartbeat: renewals must
 * resume on their own, and the retries in between must stay bounded by the
 * renew interval instead of hammering the server. Stops the shared API server,
 * so it lives in a file of its own (test files run one at a time).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadDependencies } from '../../lib/app/dependencies.ts';
import { heartbeat } from '../../lib/app/heartbeat.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import type { NodeRoundResult } from '../../lib/node/node-controller.ts';
import { isReleaseRefused } from '../../lib/release/gate.ts';
import { apiServer, restoreControlPlane, testEnv } from '../support/env.ts';
import {
  adminClients,
  deleteNodeAndLease,
  freshTable,
  functionEnv,
  readLease,
  readNode,
  readyStatus,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);

describe('heartbeat across an API server outage', () => {
  const node = uniqueName('outage');
  after(async () => {
    await restoreControlPlane(env);
    await deleteNodeAndLease(admin, node);
  });

  it('resumes renewals without a restart after kube-apiserver is down for 30 s, with bounded retries', {
    timeout: 5 * 60_000,
  }, async () => {
    const { name: tableName } = await freshTable();
    const deps = await loadDependencies(loadConfig(functionEnv(tableName, { SVK_NODE_NAMES: node })));
    const abort = new AbortController();
    let last: NodeRoundResult | undefined;
    const running = heartbeat(
      deps,
      {
        requestId: 'outage-test',
        functionName: 'heartbeat',
        deadline: performance.now() + 150_000,
        signal: abort.signal,
      },
      { onRound: (results) => (last = results[0] ?? last) },
    );
    await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
      timeoutMs: 15_000,
      what: 'Ready',
    });
    await waitFor(() => last?.leaseRenewed, { timeoutMs: 15_000, what: 'a first renewal' });

    const before = last?.requests ?? 0;
    await apiServer('stop', env);
    const stoppedAt = Date.now();
    // The outage itself: the scenario is defined as 30 s without an API server.
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    const duringOutage = (last?.requests ?? 0) - before;
    await apiServer('start', env);
    const restartedAt = Date.now();

    const lease = await waitFor(
      async () => {
        const l = await readLease(admin, node);
        return new Date(l?.spec?.renewTime ?? 0).getTime() > restartedAt ? l : undefined;
      },
      { timeoutMs: 15_000, what: 'a renewal after the restart' },
    );
    abort.abort();
    const result = await running;

    assert.ok(lease);
    assert.ok(!isReleaseRefused(result));
    assert.equal(result.role, 'holder', 'the same invocation kept holding across the outage');
    // Per renew interval at most: 5 immediate lease retries, one status write, one node read.
    const intervals = Math.ceil((restartedAt - stoppedAt) / 10_000) + 1;
    assert.ok(duringOutage >= 3, `it kept trying (${duringOutage} requests)`);
    assert.ok(
      duringOutage <= intervals * 7,
      `${duringOutage} requests in ${intervals} intervals: retries are bounded`,
    );
  });
});
