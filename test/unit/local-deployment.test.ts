import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ConfigError } from '../../lib/config/config.ts';
import { DEFAULT_POD_SYNC_CONCURRENCY, podSyncConcurrencyFromEnv } from '../../lib/local/local-deployment.ts';

describe('pod-sync concurrency of the local deployment', () => {
  it('defaults to the podSyncConcurrency parameter of serverless.yml', () => {
    const yml = readFileSync(new URL('../../serverless.yml', import.meta.url), 'utf8');
    // The file holds CloudFormation tags a plain YAML parser refuses: read the one line.
    const param = /^\s+podSyncConcurrency:\s*(\d+)\s*$/m.exec(yml)?.[1];
    assert.equal(Number(param), DEFAULT_POD_SYNC_CONCURRENCY);
    assert.equal(podSyncConcurrencyFromEnv({}), DEFAULT_POD_SYNC_CONCURRENCY);
    assert.equal(
      podSyncConcurrencyFromEnv({ SVK_LOCAL_POD_SYNC_CONCURRENCY: '' }),
      DEFAULT_POD_SYNC_CONCURRENCY,
    );
  });

  it('reads SVK_LOCAL_POD_SYNC_CONCURRENCY: a positive whole number or unlimited', () => {
    assert.equal(podSyncConcurrencyFromEnv({ SVK_LOCAL_POD_SYNC_CONCURRENCY: '25' }), 25);
    assert.equal(podSyncConcurrencyFromEnv({ SVK_LOCAL_POD_SYNC_CONCURRENCY: ' 1 ' }), 1);
    assert.equal(podSyncConcurrencyFromEnv({ SVK_LOCAL_POD_SYNC_CONCURRENCY: 'unlimited' }), 'unlimited');
    for (const bad of ['0', '-3', '2.5', 'ten', '1e3', '99999999999999999999']) {
      assert.throws(
        () => podSyncConcurrencyFromEnv({ SVK_LOCAL_POD_SYNC_CONCURRENCY: bad }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.issues.length === 1 &&
          error.issues[0]?.variable === 'SVK_LOCAL_POD_SYNC_CONCURRENCY' &&
          error.message.includes(`"${bad}"`),
      );
    }
  });
});
