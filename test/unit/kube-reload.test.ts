/**
 * KubeContext.renewCredentials, the rules of a 401's one reread of the
 * kubeconfig source (the real API server's side: credential-rotation.test.ts):
 * one read for the requests refused together, at most one per interval, a
 * kubeconfig naming another server or a source that cannot be read brings
 * nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeContext, RELOAD_MIN_INTERVAL_MS } from '../../lib/kube/kube-context.ts';

const SERVER = 'https://api.example:6443';

function rotating(tokens: Array<string | Error>, server = SERVER) {
  let now = 0;
  let reads = 0;
  const context = new KubeContext({
    name: 'test',
    server,
    token: 'first',
    now: () => now,
    reload: async () => {
      const next = tokens[reads++] ?? assert.fail('no more reads expected');
      if (next instanceof Error) throw next;
      return new KubeContext({
        name: 'test',
        server: next.startsWith('other:') ? 'https://other:6443' : server,
        token: next,
      });
    },
  });
  return {
    context,
    reads: () => reads,
    advance: (ms: number) => {
      now += ms;
    },
    bearer: async () => (await context.connect()).headers.Authorization,
  };
}

describe('credentials that rotate: KubeContext.renewCredentials', () => {
  it('reads the source once for the requests refused together, and uses what it holds', async () => {
    const r = rotating(['second']);
    const seen = r.context.generation;
    const renewed = await Promise.all([seen, seen, seen].map((g) => r.context.renewCredentials(g)));
    assert.deepEqual(renewed, [true, true, true]);
    assert.equal(r.reads(), 1);
    assert.equal(await r.bearer(), 'Bearer second');
    assert.equal(r.context.generation, 1);
  });

  it('a request refused before the last read tries the newer credentials without another read', async () => {
    const r = rotating(['second']);
    assert.equal(await r.context.renewCredentials(0), true);
    assert.equal(await r.context.renewCredentials(0), true, 'sent with generation 0, generation 1 is there');
    assert.equal(r.reads(), 1);
  });

  it(`reads at most once per ${RELOAD_MIN_INTERVAL_MS} ms: a revoked credential not yet replaced is not read for on every request`, async () => {
    const r = rotating(['second', 'third']);
    assert.equal(await r.context.renewCredentials(0), true);
    assert.equal(await r.context.renewCredentials(1), false, 'refused again at once: the 401 stands');
    assert.equal(r.reads(), 1);
    r.advance(RELOAD_MIN_INTERVAL_MS);
    assert.equal(await r.context.renewCredentials(1), true);
    assert.equal(await r.bearer(), 'Bearer third');
  });

  it('takes nothing from a source that cannot be read or names another server', async () => {
    const r = rotating([new Error('AccessDeniedException'), 'other:second']);
    assert.equal(await r.context.renewCredentials(0), false);
    r.advance(RELOAD_MIN_INTERVAL_MS);
    assert.equal(await r.context.renewCredentials(0), false);
    assert.equal(await r.bearer(), 'Bearer first');
    assert.equal(r.context.generation, 0);
  });

  it('a context without a source (inline YAML, built in code) has nothing to read', async () => {
    const context = new KubeContext({ name: 'inline', server: SERVER, token: 't' });
    assert.equal(await context.renewCredentials(0), false);
  });
});
