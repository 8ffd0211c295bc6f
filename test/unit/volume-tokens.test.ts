/**
 * The docker provider's projected tokens on an injected clock: held until
 * the kubelet's refresh moment, renewed past it, kept while valid when a
 * renewal fails, an error once expired. The TokenRequest API is a plain
 * function here; the engine answers that the volume holds nothing yet.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type Docker from 'dockerode';
import { createLogger } from '../../lib/log/logger.ts';
import type { PodPlan } from '../../lib/provider/docker/pod-plan.ts';
import {
  type IssuedToken,
  type TokenRequestSpec,
  VolumeTokens,
} from '../../lib/provider/docker/volume-tokens.ts';
import type { TokenSource } from '../../lib/provider/projected-token.ts';
import { FakeClock } from '../support/fake-clock.ts';

const S = 1000;
/** An engine on which the volume holds no `..data` yet (a 404 for every archive HEAD). */
const emptyEngine = {
  getContainer: () => ({
    infoArchive: async () => Promise.reject(Object.assign(new Error('no such path'), { statusCode: 404 })),
  }),
} as unknown as Docker;
const plan = { namespace: 'n', name: 'p', uid: 'u-1' } as PodPlan;
const source: TokenSource = {
  kind: 'serviceAccountToken',
  path: 'token',
  serviceAccount: 'sa',
  expirationSeconds: 600,
};

function setup() {
  const clock = new FakeClock();
  const asked: Array<{ at: number; serviceAccount: string; request: TokenRequestSpec }> = [];
  let failing = false;
  const tokens = new VolumeTokens({
    docker: emptyEngine,
    clock,
    log: createLogger({ level: 'silent' }),
    random: () => 0,
    sources: {
      serviceAccountToken: async (_namespace, serviceAccount, request) => {
        if (failing) throw new Error('the API server is away');
        asked.push({ at: clock.now(), serviceAccount, request });
        return {
          token: Buffer.from(`token-${asked.length}`),
          expiresAt: clock.now() + request.expirationSeconds * S,
          expirationSeconds: request.expirationSeconds,
        };
      },
    },
  });
  const get = () => tokens.token(plan, 'infra', 'v', source);
  const text = (t: IssuedToken | { error: string }) => ('error' in t ? t.error : t.token.toString());
  return {
    clock,
    asked,
    get,
    text,
    fail: (f: boolean) => {
      failing = f;
    },
  };
}

describe('projected tokens held and renewed (docker provider)', () => {
  it('asks once for a token bound to the pod, keeps it until 80 % of its lifetime, then renews it', async () => {
    const { clock, asked, get, text } = setup();
    assert.equal(text(await get()), 'token-1');
    assert.deepEqual(asked[0]?.request, { expirationSeconds: 600, pod: { name: 'p', uid: 'u-1' } });
    assert.equal(asked[0]?.serviceAccount, 'sa');
    await clock.advance(480 * S);
    assert.equal(text(await get()), 'token-1', 'kept at exactly 480 s');
    await clock.advance(1);
    assert.equal(text(await get()), 'token-2', 'renewed past 480 s');
    assert.equal(asked.length, 2);
  });

  it('keeps the token while valid when a renewal fails, and errs once it expired', async () => {
    const { clock, get, text, fail } = setup();
    await get();
    fail(true);
    await clock.advance(500 * S);
    assert.equal(text(await get()), 'token-1', 'the current one, still valid');
    await clock.advance(101 * S);
    assert.equal(text(await get()), 'failed to fetch token: the API server is away');
    fail(false);
    assert.equal(text(await get()), 'token-2');
  });
});
