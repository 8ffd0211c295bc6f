import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { apiErrorMessage } from '../../lib/kube/api-error-message.ts';

describe('apiErrorMessage', () => {
  it("names the status code and the API server's own message when it answered with a Status", () => {
    const body = JSON.stringify({ kind: 'Status', message: 'configmaps "x" is forbidden' });
    const err = new ApiException(403, 'HTTP-Code: 403\nMessage: ...\nBody: ...', body, {});
    assert.equal(apiErrorMessage(err), 'HTTP 403: configmaps "x" is forbidden');
  });

  it('names only the status code when the body is not a Status', () => {
    assert.equal(apiErrorMessage(new ApiException(502, 'bad gateway', '<html>', {})), 'HTTP 502');
  });

  it("keeps the first line of any other error's message", () => {
    assert.equal(
      apiErrorMessage(new Error('connect ECONNREFUSED\n    at somewhere')),
      'connect ECONNREFUSED',
    );
    assert.equal(apiErrorMessage('plain'), 'plain');
  });
});
