import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { invocationLog } from '../../lib/invocation.ts';
import { createLambdaContext } from '../../lib/local/lambda-context.ts';
import { lambdaLogFields, xrayTraceId } from '../../lib/log/lambda-fields.ts';
import { createLogger } from '../../lib/log/logger.ts';

describe('Lambda log fields', () => {
  it('takes the trace id as Powertools does: the Root of the trace header', () => {
    assert.equal(
      xrayTraceId('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=557abcec3ee5a047;Sampled=1'),
      '1-5759e988-bd862e3fe1be46a994272793',
    );
    assert.equal(xrayTraceId('Parent=557abcec3ee5a047; Root=1-abc;Sampled=0'), '1-abc');
    assert.equal(xrayTraceId('Parent=557abcec3ee5a047'), undefined);
    assert.equal(xrayTraceId(''), undefined);
    assert.equal(xrayTraceId(undefined), undefined);
  });

  it('reads the context; no xray_trace_id without a trace header', () => {
    const context = createLambdaContext({
      functionName: 'tick',
      timeoutMs: 1000,
      memoryMb: 512,
      requestId: 'r9',
    });
    assert.deepEqual(lambdaLogFields(context, false), {
      cold_start: false,
      function_arn: 'arn:aws:lambda:us-east-1:000000000000:function:tick',
      function_memory_size: 512,
      function_request_id: 'r9',
    });
  });

  it('an invocation made up without a Lambda context still names its request', () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const invocation = {
      requestId: 'r1',
      functionName: 'x',
      deadline: 0,
      signal: new AbortController().signal,
    };
    invocationLog(createLogger({ level: 'info' }, stream), invocation).info('m');
    assert.equal((JSON.parse(lines[0] ?? '{}') as Record<string, unknown>).function_request_id, 'r1');
  });
});
