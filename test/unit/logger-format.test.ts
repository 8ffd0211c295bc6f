/**
 * Our JSON logger (lib/log/logger.ts) writes the lines pino wrote with the
 * options the functions used before it: the same fields in the same order,
 * levels, child bindings, errors under `err`, the same redaction, so that
 * the CloudWatch Logs Insights queries of docs/operations.md keep working. pino stays a
 * development dependency for this comparison only.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { errorFields } from '../../lib/log/error-fields.ts';
import { createLogger, type Logger } from '../../lib/log/logger.ts';
import { REDACTED_PATHS, scrubSecrets } from '../../lib/log/redact.ts';

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

/** pino as lib/log/logger.ts configured it before it was replaced. */
function formerPino(level: string, base: Record<string, unknown>, stream: Writable) {
  return pino(
    {
      level,
      base,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: errorFields },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      hooks: { streamWrite: scrubSecrets },
    },
    stream,
  );
}

/**
 * The same calls on both loggers; `time` aside, the lines must be equal, key
 * order included, as JSON reads them: pino repeats a key a child bound and a
 * call gave again, where ours writes it once with the call's value, which is
 * what parsing pino's line gives.
 */
function writeBoth(level: string, calls: (log: Logger) => void): { ours: string[]; theirs: string[] } {
  const ours = sink();
  const theirs = sink();
  calls(createLogger({ level, base: { fn: 'pod-sync' } }, ours.stream));
  calls(formerPino(level, { fn: 'pod-sync' }, theirs.stream) as unknown as Logger);
  const untimed = (line: string) => JSON.stringify(JSON.parse(line.replace(/"time":"[^"]+"/, '"time":"T"')));
  return { ours: ours.lines.map(untimed), theirs: theirs.lines.map(untimed) };
}

const TOKEN = 'svk-known-token-0123456789abcdef';

describe("our logger's lines are pino's", () => {
  it('messages, fields, child bindings and levels', () => {
    const { ours, theirs } = writeBoth('debug', (log) => {
      log.info('plain');
      log.warn({ pod: 'ns/web', uid: 'u1', attempt: 2, ok: false, nothing: null }, 'with fields');
      const child = log.child({ requestId: 'r1' }).child({ node: 'vk-1' });
      child.error({ pod: 'ns/a', list: [1, 'two', { three: 3 }] }, 'nested');
      child.debug({ nested: { deeper: { x: 1 } } });
      log.trace('below the level');
      child.info({ node: 'vk-2' }, 'a field named like a binding');
    });
    assert.equal(ours.length, 5);
    assert.deepEqual(ours, theirs);
  });

  it('errors under err, alone or with a message', () => {
    const err = Object.assign(new Error('DynamoDB did not answer within 5000 ms'), { code: 'ETIMEDOUT' });
    err.stack = 'Error: DynamoDB did not answer within 5000 ms\n    at here';
    const { ours, theirs } = writeBoth('info', (log) => {
      log.error({ err, pod: 'ns/web' }, 'write failed');
      log.warn(err, 'as the first argument');
      log.warn(err);
    });
    assert.deepEqual(ours, theirs);
  });

  it('the same redaction, by key and in strings', () => {
    const { ours, theirs } = writeBoth('info', (log) => {
      log.info({ token: TOKEN, password: TOKEN, secret: TOKEN }, 'top-level keys');
      log.info({ headers: { authorization: `Bearer ${TOKEN}` } }, 'request headers');
      log.info({ request: { headers: { Authorization: `Bearer ${TOKEN}` } } }, 'nested request headers');
      log.info({ config: { users: [{ user: { token: TOKEN } }, { name: 'u' }] } }, 'kubeconfig users');
      log.child({ token: TOKEN }).info({ a: { token: TOKEN, b: 1 } }, 'a token bound to a child');
      log.warn(`EKS token k8s-aws-v1.${TOKEN} rejected`);
    });
    assert.deepEqual(ours, theirs);
    for (const line of ours) assert.ok(!line.includes(TOKEN), line);
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
