/**
 * The API server is down when the reconciler is elected: the initial
 * reconcile retries with exponential backoff and succeeds once the server is
 * back, then marks the status done. Stops the shared API server, so it lives
 * in a file of its own (test files run one at a time).
 */

import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadDependencies } from '../../lib/app/dependencies.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { DynamoDbLockStore } from '../../lib/lock/dynamodb-lock-store.ts';
import { reconcile } from '../../lib/reconcile/reconcile-entry.ts';
import { ReconcilerStatusStore } from '../../lib/release/reconciler-status.ts';
import { apiServer, restoreControlPlane, testEnv } from '../support/env.ts';
import {
  adminClients,
  deleteNodeAndLease,
  freshTable,
  functionEnv,
  readNode,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);

describe('reconciler across an API server outage', () => {
  const node = uniqueName('rec-outage');
  const abort = new AbortController();
  after(async () => {
    abort.abort();
    await restoreControlPlane(env);
    await deleteNodeAndLease(admin, node);
  });

  it('retries the first reconcile with backoff and succeeds once the API server is back', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable(env);
    const deps = await loadDependencies(
      loadConfig(
        functionEnv(tableName, {
          SVK_NODE_NAMES: node,
          SVK_LOCK_TTL_SECONDS: '5',
          SVK_LOCK_POLL_MS: '250',
          SVK_RECONCILE_INTERVAL_SECONDS: '5',
          SVK_RECONCILE_STOP_BEFORE_DEADLINE_MS: '1000',
          SVK_KUBE_REQUEST_TIMEOUT_MS: '1000',
        }),
      ),
    );
    const failures: number[] = [];
    let succeeded = false;
    await apiServer('stop', env);
    const running = reconcile(
      deps,
      {
        requestId: 'outage-test',
        functionName: 'reconcile',
        deadline: performance.now() + 120_000,
        signal: abort.signal,
      },
      {
        onReconcile: (attempt) => {
          if (!attempt.initial) return;
          if (attempt.error) failures.push(performance.now());
          else succeeded = true;
        },
      },
    );
    await waitFor(() => failures.length >= 4, { timeoutMs: 30_000, what: 'several failed attempts' });
    assert.equal(
      await new ReconcilerStatusStore(table, new DynamoDbLockStore(table)).get(),
      undefined,
      'no status while nothing was reconciled',
    );
    await apiServer('start', env);
    const status = await waitFor(
      async () => {
        const s = await new ReconcilerStatusStore(table, new DynamoDbLockStore(table)).get();
        return s?.state === 'done' ? s : undefined;
      },
      { timeoutMs: 60_000, what: 'the initial reconcile to succeed and the status to be done' },
    );
    assert.ok(succeeded);
    assert.ok(await readNode(admin, node), 'the node was registered by the reconcile');
    abort.abort();
    const result = await running;
    assert.equal(result.role, 'holder');
    if (result.role !== 'holder') return;
    assert.equal(result.transition, 'none');
    assert.equal(status.version, deps.config.release);
    assert.ok(result.initialAttempts >= 5, `${result.initialAttempts} attempts`);
    // Exponential: the gaps between failed attempts grow.
    const gaps = failures.slice(1).map((t, i) => t - (failures[i] ?? 0));
    assert.ok(
      (gaps.at(-1) ?? 0) > (gaps[0] ?? 0),
      `gaps grow: ${gaps.map((g) => Math.round(g)).join(', ')} ms`,
    );
  });
});
