/**
 * The function role's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN, which Lambda sets) are read by the AWS SDK clients
 * themselves; the configuration only refuses a set that cannot be meant,
 * so that half a key pair is an error naming the variable instead of a
 * silent fall-through to the SDK's next credential provider.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../lib/config/load-config.ts';

describe('the AWS credential variables', () => {
  it('accepts the three variables Lambda sets, or none', () => {
    loadConfig({
      AWS_ACCESS_KEY_ID: 'AKIDENV',
      AWS_SECRET_ACCESS_KEY: 'env-secret',
      AWS_SESSION_TOKEN: 'env-token',
    });
    loadConfig({});
  });

  it('refuses half a key pair, naming the missing variable and never a value', () => {
    assert.throws(
      () => loadConfig({ AWS_ACCESS_KEY_ID: 'AKIDENV' }),
      (err: unknown) =>
        err instanceof Error &&
        err.message === 'invalid configuration: AWS_SECRET_ACCESS_KEY must be set with AWS_ACCESS_KEY_ID',
    );
    assert.throws(() => loadConfig({ AWS_SECRET_ACCESS_KEY: 'env-secret' }), /AWS_ACCESS_KEY_ID must be set/);
    assert.throws(() => loadConfig({ AWS_SESSION_TOKEN: 'env-token' }), /AWS_SESSION_TOKEN is set without/);
  });
});
