import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { createLogger, scrubSecrets } from '../../lib/log/logger.ts';

const TOKEN = 'svk-known-token-0123456789abcdef';

function capture(level = 'trace') {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  // pino writes synchronously to a plain Writable: every line is there when the call returns.
  const log = createLogger({ level, base: { fn: 'test' } }, stream);
  return { log, lines };
}

describe('logger', () => {
  it('writes JSON lines with the bound fields', () => {
    const { log, lines } = capture();
    log.child({ requestId: 'r1' }).child({ pod: 'ns/web', node: 'vk' }).info({ uid: 'u1' }, 'hello');
    const line = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    assert.deepEqual(
      {
        fn: line.fn,
        requestId: line.requestId,
        pod: line.pod,
        node: line.node,
        uid: line.uid,
        msg: line.msg,
      },
      { fn: 'test', requestId: 'r1', pod: 'ns/web', node: 'vk', uid: 'u1', msg: 'hello' },
    );
    assert.equal(line.level, 'INFO', 'the level as Powertools prints it');
    assert.match(String(line.time), /^\d{4}-\d\d-\d\dT/);
  });

  it('honours the level', () => {
    const { log, lines } = capture('warn');
    log.info('quiet');
    log.warn('loud');
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { msg: string }).msg),
      ['loud'],
    );
  });

  it('never writes a token, whatever shape it comes in', () => {
    const { log, lines } = capture();
    log.info({ token: TOKEN, password: TOKEN }, 'top-level keys');
    log.info({ headers: { authorization: `Bearer ${TOKEN}` } }, 'request headers');
    log.info({ request: { headers: { Authorization: `Bearer ${TOKEN}` } } }, 'nested request headers');
    log.info({ kube: { kubeconfig: `users:\n- user:\n    token: ${TOKEN}` } }, 'kubeconfig');
    const apiError = new ApiException(
      401,
      `Unauthorized: Authorization: Bearer ${TOKEN}`,
      { kind: 'Status' },
      {
        authorization: `Bearer ${TOKEN}`,
      },
    );
    log.error({ err: apiError }, 'client-node error with headers');
    log.error({ err: new Error(`fetch failed for https://api/?token=${TOKEN}`) }, 'token in a message');
    log.warn(
      { url: `https://sts.amazonaws.com/?X-Amz-Security-Token=${TOKEN}&X-Amz-Signature=${TOKEN}` },
      'url',
    );
    log.warn(`EKS token k8s-aws-v1.${TOKEN} rejected`);
    log.warn({ detail: `{"token":"${TOKEN}"}` }, 'JSON inside a string');
    assert.equal(lines.length, 9);
    for (const line of lines) {
      assert.ok(!line.includes(TOKEN), `token in: ${line}`);
      assert.doesNotThrow(() => JSON.parse(line), line);
    }
    assert.match(lines[4] ?? '', /"status":401/, 'the status code is logged, as its own field');
  });

  it('scrubs credentials from strings and leaves the rest', () => {
    assert.equal(scrubSecrets('Authorization: Bearer abcdefgh12345678'), 'Authorization: Bearer [redacted]');
    assert.equal(scrubSecrets('?X-Amz-Signature=abc&x=1'), '?X-Amz-Signature=[redacted]&x=1');
    assert.equal(scrubSecrets('token: abc, next'), 'token: [redacted], next');
    assert.equal(scrubSecrets('pod ns/web Running on vk-1'), 'pod ns/web Running on vk-1');
  });
});
