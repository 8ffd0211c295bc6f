/**
 * Projected service account tokens: what a source asks for, and the
 * kubelet's refresh rule (pkg/kubelet/token/token_manager.go
 * requiresRefresh) on an injected time and jitter draw.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { fileVolume, volumePayload } from '../../lib/provider/file-volumes.ts';
import {
  jwtLifetime,
  MAX_TOKEN_AGE_MS,
  plannedToken,
  tokenKey,
  tokenNeedsRefresh,
} from '../../lib/provider/projected-token.ts';

const S = 1000;
const T0 = Date.UTC(2026, 11, 7, 1, 0, 0);

/** A token issued at T0 with a lifetime of `seconds`. */
const issued = (seconds: number) => ({ expiresAt: T0 + seconds * S, expirationSeconds: seconds });

describe('tokenNeedsRefresh (the kubelet rule: 80 % of the lifetime or 24 h, less a jitter)', () => {
  it('keeps a 600 s token until 480 s, renews it after (no jitter)', () => {
    const token = issued(600);
    assert.equal(tokenNeedsRefresh(token, T0, 0), false);
    assert.equal(tokenNeedsRefresh(token, T0 + 479 * S, 0), false);
    // Go's time.After is strict: at exactly 80 % it is still kept.
    assert.equal(tokenNeedsRefresh(token, T0 + 480 * S, 0), false);
    assert.equal(tokenNeedsRefresh(token, T0 + 480 * S + 1, 0), true);
    assert.equal(tokenNeedsRefresh(token, T0 + 599 * S, 0), true);
  });

  it('moves the moment earlier by a jitter of whole seconds below 10', () => {
    const token = issued(600);
    // A draw of 0.99 is 9 s of jitter: renewed after 471 s.
    assert.equal(tokenNeedsRefresh(token, T0 + 471 * S, 0.99), false);
    assert.equal(tokenNeedsRefresh(token, T0 + 471 * S + 1, 0.99), true);
    // 0.55 is 5 s, not 5.5: whole seconds.
    assert.equal(tokenNeedsRefresh(token, T0 + 475 * S, 0.55), false);
    assert.equal(tokenNeedsRefresh(token, T0 + 475 * S + 1, 0.55), true);
  });

  it('renews the default 3600 s token after 2880 s', () => {
    const token = issued(3600);
    assert.equal(tokenNeedsRefresh(token, T0 + 2880 * S, 0), false);
    assert.equal(tokenNeedsRefresh(token, T0 + 2880 * S + 1, 0), true);
  });

  it('renews a long-lived token once it is 24 h old, not at 80 % of its lifetime', () => {
    const token = issued(7 * 24 * 3600);
    assert.equal(tokenNeedsRefresh(token, T0 + MAX_TOKEN_AGE_MS, 0), false);
    assert.equal(tokenNeedsRefresh(token, T0 + MAX_TOKEN_AGE_MS + 1, 0), true);
    assert.equal(tokenNeedsRefresh(token, T0 + MAX_TOKEN_AGE_MS - 9 * S + 1, 0.95), true);
  });

  it('computes 20 % of the lifetime in whole seconds, as integer division does', () => {
    // 20 % of 601 s is 120.2 s: Go's (601*20)/100 is 120, so the token is kept until 481 s.
    const token = issued(601);
    assert.equal(tokenNeedsRefresh(token, T0 + 481 * S, 0), false);
    assert.equal(tokenNeedsRefresh(token, T0 + 481 * S + 1, 0), true);
  });
});

describe('jwtLifetime (a token read back from its volume, dated by its claims)', () => {
  const jwt = (claims: object) =>
    `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

  it('takes exp and iat', () => {
    assert.deepEqual(jwtLifetime(jwt({ iat: T0 / S, exp: T0 / S + 600, aud: ['x'] })), issued(600));
  });

  it('takes the time asked for of a token whose expiry the API server extended (warnafter)', () => {
    const extended = jwt({
      iat: T0 / S,
      exp: T0 / S + 31536000,
      'kubernetes.io': { warnafter: T0 / S + 3607 },
    });
    assert.deepEqual(jwtLifetime(extended), issued(3607));
  });

  it('gives nothing for what is not a dated JWT', () => {
    assert.equal(jwtLifetime('not a token'), undefined);
    assert.equal(jwtLifetime(jwt({ exp: T0 / S })), undefined);
    assert.equal(jwtLifetime(jwt({ iat: T0 / S, exp: T0 / S })), undefined);
    assert.equal(jwtLifetime('a.%%%.c'), undefined);
  });
});

describe('projected serviceAccountToken sources', () => {
  const pod = (spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
    metadata: { namespace: 'n', name: 'p', uid: 'u' },
    spec: { containers: [{ name: 'app' }], serviceAccountName: 'builder', ...spec },
  });

  it("asks for the pod's service account, the audience and the API server's default expiry", () => {
    assert.deepEqual(plannedToken({ path: 'token' }, pod()), {
      token: {
        kind: 'serviceAccountToken',
        path: 'token',
        serviceAccount: 'builder',
        expirationSeconds: 3600,
      },
    });
    assert.deepEqual(plannedToken({ path: 't', audience: 'vault', expirationSeconds: 600 }, pod()).token, {
      kind: 'serviceAccountToken',
      path: 't',
      serviceAccount: 'builder',
      audience: 'vault',
      expirationSeconds: 600,
    });
  });

  it('writes the token 0600 beside an fsGroup, as the kubelet does', () => {
    assert.equal(plannedToken({ path: 't' }, pod({ securityContext: { fsGroup: 2000 } })).token.mode, 0o600);
  });

  it("plans the 1.21+ kube-api-access volume and fills it: the token, the CA's ConfigMap, the namespace", () => {
    const planned = fileVolume(
      {
        name: 'kube-api-access-abcde',
        projected: {
          defaultMode: 0o644,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            {
              downwardAPI: {
                items: [
                  { path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
                ],
              },
            },
          ],
        },
      },
      pod(),
    );
    assert.ok('volume' in planned, JSON.stringify(planned));
    const missing = volumePayload(
      planned.volume,
      new Map([['configMap/kube-root-ca.crt', new Map([['ca.crt', Buffer.from('CA')]])]]),
    );
    assert.deepEqual(missing, { error: 'failed to fetch token for token' });
    const payload = volumePayload(
      planned.volume,
      new Map([
        ['configMap/kube-root-ca.crt', new Map([['ca.crt', Buffer.from('CA')]])],
        [tokenKey('token'), new Map([['token', Buffer.from('eyJ.x.y')]])],
      ]),
    );
    assert.ok('files' in payload);
    assert.deepEqual(
      payload.files.map((f) => [f.path, f.mode.toString(8), f.content.toString()]),
      [
        ['ca.crt', '644', 'CA'],
        ['namespace', '644', 'n'],
        ['token', '644', 'eyJ.x.y'],
      ],
    );
  });
});
