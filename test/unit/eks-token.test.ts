/**
 * The EKS bearer token: the exact presigned STS GetCallerIdentity URL for a
 * fixed clock and fixed credentials, its signature recomputed here by hand
 * from the SigV4 rules (not through the signer under test), and the token
 * framing `k8s-aws-v1.` + unpadded base64url.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import type { ClusterCredentialSources } from '../../lib/kube/aws-credential-sources.ts';
import { loadClusterKubeConfig, TOKEN_REFRESH_MARGIN_MS } from '../../lib/kube/credentials.ts';
import { createEksToken, EKS_TOKEN_PREFIX, TOKEN_VALIDITY_MS } from '../../lib/kube/eks-token.ts';
import type { KubeContext } from '../../lib/kube/kube-context.ts';
import { FakeClock } from '../support/fake-clock.ts';

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'FwoGZXIvYXdzE/session+token=',
};
const now = Date.UTC(2024, 0, 2, 3, 4, 5);

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const hmac = (key: Buffer | string, s: string) => createHmac('sha256', key).update(s, 'utf8').digest();

/** SigV4 query signature, from the AWS documentation's steps. */
function expectedSignature(query: string, clusterName: string): string {
  const canonicalRequest = [
    'GET',
    '/',
    query,
    'host:sts.us-west-2.amazonaws.com',
    `x-k8s-aws-id:${clusterName}`,
    '',
    'host;x-k8s-aws-id',
    sha256(''),
  ].join('\n');
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    '20240102T030405Z',
    '20240102/us-west-2/sts/aws4_request',
    sha256(canonicalRequest),
  ].join('\n');
  let key = hmac(`AWS4${credentials.secretAccessKey}`, '20240102');
  for (const part of ['us-west-2', 'sts', 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
}

describe('EKS token', () => {
  it('is the presigned GetCallerIdentity URL, header x-k8s-aws-id signed, expiring in 60 s', async () => {
    const { token, url, expiresAt } = await createEksToken({
      clusterName: 'my-cluster',
      region: 'us-west-2',
      credentials,
      now,
    });
    const unsigned =
      'Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256' +
      '&X-Amz-Credential=AKIDEXAMPLE%2F20240102%2Fus-west-2%2Fsts%2Faws4_request' +
      '&X-Amz-Date=20240102T030405Z&X-Amz-Expires=60' +
      '&X-Amz-Security-Token=FwoGZXIvYXdzE%2Fsession%2Btoken%3D' +
      '&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id';
    const signature = expectedSignature(unsigned, 'my-cluster');
    assert.equal(
      url,
      'https://sts.us-west-2.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15' +
        '&X-Amz-Algorithm=AWS4-HMAC-SHA256' +
        '&X-Amz-Credential=AKIDEXAMPLE%2F20240102%2Fus-west-2%2Fsts%2Faws4_request' +
        '&X-Amz-Date=20240102T030405Z&X-Amz-Expires=60' +
        '&X-Amz-Security-Token=FwoGZXIvYXdzE%2Fsession%2Btoken%3D' +
        `&X-Amz-Signature=${signature}` +
        '&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id',
    );
    assert.match(signature, /^[0-9a-f]{64}$/);
    assert.equal(expiresAt, now + TOKEN_VALIDITY_MS);
    assert.ok(token.startsWith(EKS_TOKEN_PREFIX));
    const encoded = token.slice(EKS_TOKEN_PREFIX.length);
    assert.match(encoded, /^[A-Za-z0-9_-]+$/, 'base64url without padding');
    assert.equal(Buffer.from(encoded, 'base64url').toString('utf8'), url);
  });

  it('without a session token, leaves X-Amz-Security-Token out of the signed query', async () => {
    const { url } = await createEksToken({
      clusterName: 'c1',
      region: 'us-west-2',
      credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
      now,
    });
    assert.doesNotMatch(url, /Security-Token/);
    const unsigned =
      'Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256' +
      '&X-Amz-Credential=AKIDEXAMPLE%2F20240102%2Fus-west-2%2Fsts%2Faws4_request' +
      '&X-Amz-Date=20240102T030405Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id';
    assert.ok(url.includes(`X-Amz-Signature=${expectedSignature(unsigned, 'c1')}&`));
  });
});

describe('EKS cluster access', () => {
  function fakeSources(calls: string[]): ClusterCredentialSources {
    return {
      secretString: async () => assert.fail('not used'),
      parameterValue: async () => assert.fail('not used'),
      describeCluster: async (name) => {
        calls.push(`describe ${name}`);
        return { endpoint: 'https://ABC.gr7.us-west-2.eks.amazonaws.com', caData: 'Y2E=' };
      },
      credentials: async () => {
        calls.push('credentials');
        return credentials;
      },
    };
  }

  it('describes the cluster once, and signs a token into each request until it is near expiry', async () => {
    const calls: string[] = [];
    const clock = new FakeClock({ wall: now });
    const kc: KubeContext = await loadClusterKubeConfig(
      { eks: { clusterName: 'my-cluster' } },
      { region: 'us-west-2', clock, sources: fakeSources(calls) },
    );
    assert.equal(kc.server, 'https://ABC.gr7.us-west-2.eks.amazonaws.com');
    assert.equal(kc.ca?.toString('base64'), 'Y2E=');
    const header = async () => (await kc.connect()).headers.Authorization ?? '';
    const first = await header();
    const expected = await createEksToken({
      clusterName: 'my-cluster',
      region: 'us-west-2',
      credentials,
      now,
    });
    assert.equal(first, `Bearer ${expected.token}`);
    await clock.advance(TOKEN_VALIDITY_MS - TOKEN_REFRESH_MARGIN_MS - 1);
    assert.equal(await header(), first, 'reused while far from expiry');
    await clock.advance(1);
    const renewed = await header();
    assert.notEqual(renewed, first, 'made anew before it expires');
    assert.deepEqual(calls, ['describe my-cluster', 'credentials', 'credentials']);
  });

  it('makes a token anew before the AWS credentials it was signed with expire, not only before its own 15 minutes', async () => {
    const clock = new FakeClock({ wall: now });
    // Session credentials (a role's) that expire in 8 minutes: a token signed with them is refused after that.
    let handedOut = 0;
    const sources: ClusterCredentialSources = {
      ...fakeSources([]),
      credentials: async () => {
        handedOut++;
        return { ...credentials, expiration: new Date(clock.now() + 8 * 60_000) };
      },
    };
    const kc = await loadClusterKubeConfig(
      { eks: { clusterName: 'c', endpoint: 'https://x.example', caData: 'Q0E=' } },
      { region: 'eu-west-1', clock, sources },
    );
    const header = async () => (await kc.connect()).headers.Authorization ?? '';
    const first = await header();
    await clock.advance(8 * 60_000 - TOKEN_REFRESH_MARGIN_MS - 1);
    assert.equal(await header(), first, 'reused while its credentials are far from expiry');
    await clock.advance(1);
    assert.notEqual(await header(), first, 'made anew with fresh credentials before they expire');
    assert.equal(handedOut, 2);
  });

  it('uses the configured endpoint and CA without describing the cluster', async () => {
    const calls: string[] = [];
    const kc = await loadClusterKubeConfig(
      { eks: { clusterName: 'c', endpoint: 'https://x.example', caData: 'Q0E=' } },
      { region: 'eu-west-1', clock: new FakeClock({ wall: now }), sources: fakeSources(calls) },
    );
    assert.equal(kc.server, 'https://x.example');
    assert.deepEqual(calls, []);
  });
});
