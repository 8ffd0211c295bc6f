/**
 * Which credentials our own AWS calls sign with (lib/aws/credentials.ts):
 * the environment's, read by the config, as they are; without them the
 * SDK's provider chain, loaded once, shared by concurrent calls, refreshed
 * five minutes before its credentials expire (as the SDK refreshes them),
 * and tried again after a failure. The chain is a plain function here; the
 * clock a plain value.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type AwsCredentials,
  CREDENTIALS_REFRESH_BEFORE_MS,
  credentialProvider,
} from '../../lib/aws/credentials.ts';
import { loadConfig } from '../../lib/config/load-config.ts';

const given = { accessKeyId: 'AKIDENV', secretAccessKey: 'env-secret', sessionToken: 'env-token' };

/** A provider chain that answers with `answers` in turn, counting its loads and calls. */
function chain(answers: Array<AwsCredentials | Error>) {
  const counts = { loads: 0, calls: 0 };
  const loadChain = async () => {
    counts.loads++;
    return async () => {
      const answer = answers[Math.min(counts.calls++, answers.length - 1)];
      if (answer instanceof Error) throw answer;
      return answer as AwsCredentials;
    };
  };
  return { counts, loadChain };
}

describe('credentials of our own AWS calls', () => {
  it("uses the environment's credentials as they are, and never loads the provider chain", async () => {
    const { counts, loadChain } = chain([]);
    const provider = credentialProvider(given, { loadChain });
    assert.deepEqual(await provider(), given);
    assert.equal(counts.loads, 0);
  });

  it('without them, loads the chain once for concurrent calls and keeps what it gave', async () => {
    const { counts, loadChain } = chain([{ accessKeyId: 'AKIDROLE', secretAccessKey: 's' }]);
    const provider = credentialProvider(undefined, { loadChain });
    const [a, b] = await Promise.all([provider(), provider()]);
    assert.equal(a.accessKeyId, 'AKIDROLE');
    assert.deepEqual(a, b);
    await provider();
    assert.deepEqual(counts, { loads: 1, calls: 1 });
  });

  it('resolves again credentials that expire within five minutes', async () => {
    let now = Date.parse('2026-11-27T00:00:00Z');
    const expiration = new Date(now + 60 * 60_000);
    const { counts, loadChain } = chain([
      { accessKeyId: 'AKID1', secretAccessKey: 's', expiration },
      { accessKeyId: 'AKID2', secretAccessKey: 's', expiration: new Date(now + 2 * 60 * 60_000) },
    ]);
    const provider = credentialProvider(undefined, { loadChain, now: () => now });
    assert.equal((await provider()).accessKeyId, 'AKID1');
    now = expiration.getTime() - CREDENTIALS_REFRESH_BEFORE_MS - 1;
    assert.equal((await provider()).accessKeyId, 'AKID1', 'still more than five minutes left');
    now += 2;
    assert.equal((await provider()).accessKeyId, 'AKID2');
    assert.equal(counts.calls, 2);
  });

  it('a failed resolution is tried again at the next call', async () => {
    const { counts, loadChain } = chain([
      new Error('no IMDS'),
      { accessKeyId: 'AKID', secretAccessKey: 's' },
    ]);
    const provider = credentialProvider(undefined, { loadChain });
    await assert.rejects(provider(), /no IMDS/);
    assert.equal((await provider()).accessKeyId, 'AKID');
    assert.equal(counts.calls, 2);
  });

  it('a chain that answers without a key says which part is missing, quoting nothing', async () => {
    const { loadChain } = chain([{ accessKeyId: 'AKIDSECRETLESS', secretAccessKey: '' }]);
    const provider = credentialProvider(undefined, { loadChain });
    await assert.rejects(provider(), (err: unknown) => {
      assert.ok(err instanceof Error);
      assert.equal(err.message, 'the AWS credential provider gave no secretAccessKey');
      return true;
    });
  });
});

describe('the credentials in the config', () => {
  it('reads the three variables Lambda sets', () => {
    const config = loadConfig({
      AWS_ACCESS_KEY_ID: 'AKIDENV',
      AWS_SECRET_ACCESS_KEY: 'env-secret',
      AWS_SESSION_TOKEN: 'env-token',
    });
    assert.deepEqual(config.aws, { credentials: given, sdkEndpointRules: false });
    assert.deepEqual(loadConfig({}).aws, { sdkEndpointRules: false });
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

  it("leaves DynamoDB's endpoint to the SDK's rules when FIPS, dual-stack or an endpoint variable is set", () => {
    for (const variable of [
      'AWS_USE_FIPS_ENDPOINT',
      'AWS_USE_DUALSTACK_ENDPOINT',
      'AWS_ENDPOINT_URL',
      'AWS_ENDPOINT_URL_DYNAMODB',
    ]) {
      assert.equal(loadConfig({ [variable]: 'true' }).aws.sdkEndpointRules, true, variable);
    }
  });
});
