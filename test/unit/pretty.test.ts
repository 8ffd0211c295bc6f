import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLogLine } from '../../lib/log/pretty.ts';

describe('formatLogLine', () => {
  it('puts time, level, function, request, node and pod first, then the rest as key=value, without the Lambda context', () => {
    const line = JSON.stringify({
      level: 'WARN',
      time: '2026-01-02T12:00:01.234Z',
      service: 'svk-dev',
      function_name: 'pod-sync',
      cold_start: false,
      function_arn: 'arn:aws:lambda:us-east-1:000000000000:function:pod-sync',
      function_memory_size: 256,
      function_request_id: '1a2b3c4d-5e6f',
      xray_trace_id: '1-5759e988-bd862e3fe1be46a994272793',
      pod: 'ns/web',
      uid: 'u-1',
      node: 'vk-1',
      err: { type: 'Error', message: 'boom\n    at x', stack: '...' },
      attempt: 2,
      msg: 'provider create failed',
    });
    assert.equal(
      formatLogLine(line),
      '12:00:01.234 WARN  pod-sync 1a2b3c4d node=vk-1 pod=ns/web provider create failed uid=u-1 err="Error: boom" attempt=2',
    );
  });

  it('passes other lines through', () => {
    assert.equal(formatLogLine('[start] ready'), '[start] ready');
    assert.equal(formatLogLine('[1,2]'), '[1,2]');
  });
});
