/**
 * The lines the functions' logger (pino, lib/log/logger.ts) writes, whole:
 * fields in order, levels as Powertools prints them, child bindings, errors
 * under `err`, both redactions, so that the CloudWatch Logs Insights queries
 * of docs/operations.md keep working.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger, type Logger } from '../../lib/log/logger.ts';

function sink(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

/**
 * The lines of `calls`, `time` checked and then left out, as JSON reads
 * them: pino repeats a key a child bound and a call gave again, and JSON
 * keeps the last.
 */
function linesOf(level: string, calls: (log: Logger) => void): string[] {
  const { lines, stream } = sink();
  calls(createLogger({ level, base: { fn: 'pod-sync' } }, stream));
  return lines.map((line) => {
    const { time, ...rest } = JSON.parse(line) as Record<string, unknown>;
    assert.match(String(time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, line);
    return JSON.stringify(rest);
  });
}

const TOKEN = 'svk-known-token-0123456789abcdef';

describe("the logger's lines", () => {
  it('messages, fields, child bindings and levels', () => {
    const lines = linesOf('debug', (log) => {
      log.info('plain');
      log.warn({ pod: 'ns/web', uid: 'u1', attempt: 2, ok: false, nothing: null }, 'with fields');
      const child = log.child({ requestId: 'r1' }).child({ node: 'vk-1' });
      child.error({ pod: 'ns/a', list: [1, 'two', { three: 3 }] }, 'nested');
      child.debug({ nested: { deeper: { x: 1 } } });
      log.trace('below the level');
      child.info({ node: 'vk-2' }, 'a field named like a binding');
    });
    assert.deepEqual(lines, [
      '{"level":"INFO","fn":"pod-sync","msg":"plain"}',
      '{"level":"WARN","fn":"pod-sync","pod":"ns/web","uid":"u1","attempt":2,"ok":false,"nothing":null,"msg":"with fields"}',
      '{"level":"ERROR","fn":"pod-sync","requestId":"r1","node":"vk-1","pod":"ns/a","list":[1,"two",{"three":3}],"msg":"nested"}',
      '{"level":"DEBUG","fn":"pod-sync","requestId":"r1","node":"vk-1","nested":{"deeper":{"x":1}}}',
      '{"level":"INFO","fn":"pod-sync","requestId":"r1","node":"vk-2","msg":"a field named like a binding"}',
    ]);
  });

  it('fatal is printed as Powertools prints its critical level', () => {
    assert.deepEqual(
      linesOf('trace', (log) => {
        log.fatal('gone');
        log.trace('detail');
      }),
      [
        '{"level":"CRITICAL","fn":"pod-sync","msg":"gone"}',
        '{"level":"TRACE","fn":"pod-sync","msg":"detail"}',
      ],
    );
  });

  it('errors under err, alone or with a message', () => {
    const err = Object.assign(new Error('DynamoDB did not answer within 5000 ms'), { code: 'ETIMEDOUT' });
    err.stack = 'Error: DynamoDB did not answer within 5000 ms\n    at here';
    const lines = linesOf('info', (log) => {
      log.error({ err, pod: 'ns/web' }, 'write failed');
      log.warn(err, 'as the first argument');
      log.warn(err);
    });
    const errJson =
      '{"type":"Error","message":"DynamoDB did not answer within 5000 ms","code":"ETIMEDOUT","stack":"Error: DynamoDB did not answer within 5000 ms\\n    at here"}';
    assert.deepEqual(lines, [
      `{"level":"ERROR","fn":"pod-sync","err":${errJson},"pod":"ns/web","msg":"write failed"}`,
      `{"level":"WARN","fn":"pod-sync","err":${errJson},"msg":"as the first argument"}`,
      `{"level":"WARN","fn":"pod-sync","err":${errJson},"msg":"DynamoDB did not answer within 5000 ms"}`,
    ]);
  });

  it('the same redaction, by key and in strings', () => {
    const lines = linesOf('info', (log) => {
      log.info({ token: TOKEN, password: TOKEN, secret: TOKEN }, 'top-level keys');
      log.info({ headers: { authorization: `Bearer ${TOKEN}` } }, 'request headers');
      log.info({ request: { headers: { Authorization: `Bearer ${TOKEN}` } } }, 'nested request headers');
      log.info({ config: { users: [{ user: { token: TOKEN } }, { name: 'u' }] } }, 'kubeconfig users');
      log.child({ token: TOKEN }).info({ a: { token: TOKEN, b: 1 } }, 'a token bound to a child');
      log.warn(`EKS token k8s-aws-v1.${TOKEN} rejected`);
    });
    assert.deepEqual(lines, [
      '{"level":"INFO","fn":"pod-sync","token":"[redacted]","password":"[redacted]","secret":"[redacted]","msg":"top-level keys"}',
      '{"level":"INFO","fn":"pod-sync","headers":{"authorization":"[redacted]"},"msg":"request headers"}',
      '{"level":"INFO","fn":"pod-sync","request":{"headers":{"Authorization":"[redacted]"}},"msg":"nested request headers"}',
      '{"level":"INFO","fn":"pod-sync","config":{"users":[{"user":{"token":"[redacted]"}},{"name":"u"}]},"msg":"kubeconfig users"}',
      '{"level":"INFO","fn":"pod-sync","token":"[redacted]","a":{"token":"[redacted]","b":1},"msg":"a token bound to a child"}',
      '{"level":"WARN","fn":"pod-sync","msg":"EKS token [redacted] rejected"}',
    ]);
    for (const line of lines) assert.ok(!line.includes(TOKEN), line);
  });

  it('leaves the objects it was given unchanged', () => {
    const fields = { headers: { authorization: 'Bearer abcdefghijkl' }, pod: 'ns/web' };
    const { lines, stream } = sink();
    createLogger({ level: 'info' }, stream).info(fields, 'm');
    assert.equal(fields.headers.authorization, 'Bearer abcdefghijkl');
    assert.match(lines[0] ?? '', /"authorization":"\[redacted\]"/);
  });

  it('refuses a level it does not know, and writes nothing when silent', () => {
    assert.throws(() => createLogger({ level: 'verbose' }), /unknown log level "verbose"/);
    const { lines, stream } = sink();
    const silent = createLogger({ level: 'silent' }, stream);
    silent.fatal('nothing');
    assert.deepEqual(lines, []);
    assert.equal(silent.isLevelEnabled('fatal'), false);
  });
});
