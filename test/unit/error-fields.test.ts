/**
 * API errors in log lines: a few short fields, never client-node's whole
 * error object; an expected refusal recognised by predicate.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { apiErrorFields, apiErrorMessage, isNamespaceGoing } from '../../lib/kube/api-error-message.ts';
import { errorFields } from '../../lib/log/error-fields.ts';
import { createLogger } from '../../lib/log/logger.ts';

/** A refused Event in a terminating namespace, as kube-apiserver 1.20 answers it. */
const terminatingStatus = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message:
    'events "web-0.1a2b3c4d5e6f7081" is forbidden: unable to create new content in namespace shop because it is being terminated',
  reason: 'Forbidden',
  details: {
    name: 'web-0.1a2b3c4d5e6f7081',
    kind: 'events',
    causes: [
      {
        reason: 'NamespaceTerminating',
        message: 'namespace shop is being terminated',
        field: 'metadata.namespace',
      },
    ],
  },
  code: 403,
};

/** client-node's error for that answer: the body and every header, repeated in the message. */
function clientError(status: object, code = 403): ApiException<string> {
  const body = JSON.stringify(status);
  const headers = {
    'content-type': 'application/json',
    'x-kubernetes-pf-flowschema-uid': 'f'.repeat(36),
    date: 'now',
  };
  return new ApiException(
    code,
    `HTTP-Code: ${code}\nMessage: Unknown API Status Code!\nBody: ${JSON.stringify(body)}\nHeaders: ${JSON.stringify(headers)}`,
    body,
    headers,
  );
}

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, log: createLogger({ level: 'debug' }, stream) };
}

describe('API errors in logs', () => {
  it('an API error is logged as status, reason and message, in a short line', () => {
    const { lines, log } = capture();
    log.warn({ err: clientError(terminatingStatus) }, 'could not record event on pod');
    assert.equal(lines.length, 1);
    const line = JSON.parse(lines[0] ?? '{}') as { err: Record<string, unknown> };
    assert.deepEqual(line.err, {
      type: 'ApiException',
      status: 403,
      reason: 'Forbidden',
      message: terminatingStatus.message,
    });
    assert.ok((lines[0] ?? '').length < 400, `${lines[0]?.length} characters`);
    assert.doesNotMatch(lines[0] ?? '', /Headers|flowschema|\\\\/);
  });

  it('a watch ERROR Status is logged the same way', () => {
    assert.deepEqual(
      errorFields({
        kind: 'Status',
        code: 410,
        reason: 'Expired',
        message: 'too old resource version: 1 (5)',
      }),
      {
        type: 'Status',
        status: 410,
        reason: 'Expired',
        message: 'too old resource version: 1 (5)',
      },
    );
  });

  it('a body that is not a Status gives the code alone; a long message is cut', () => {
    assert.deepEqual(apiErrorFields(new ApiException(502, 'Bad Gateway', '<html>…</html>', {})), {
      status: 502,
      message: 'HTTP 502',
    });
    const long = apiErrorFields(
      clientError({ kind: 'Status', code: 422, reason: 'Invalid', message: 'x'.repeat(2_000) }, 422),
    );
    assert.ok((long?.message.length ?? 0) <= 301);
  });

  it("a Docker or Podman engine's error is logged with the engine's own message, not the code alone", () => {
    // As dockerode rejects: its message, the HTTP status and the engine's JSON body, parsed.
    const message =
      'container create: creating container storage: the container name "k8s_x" is already in use';
    const err = Object.assign(new Error(`(HTTP code 500) server error - ${message} `), {
      reason: 'server error',
      statusCode: 500,
      json: { cause: 'that name is already in use', message, response: 500 },
    });
    assert.deepEqual(errorFields(err), { type: 'Error', status: 500, message });
    assert.equal(apiErrorMessage(err), `HTTP 500: ${message}`);
    const { lines, log } = capture();
    log.warn({ err }, 'container start failed');
    assert.match(lines[0] ?? '', /is already in use/);
  });

  it('other errors keep their type, message and stack, and their cause in the same form', () => {
    const fields = errorFields(new Error('publish failed', { cause: clientError(terminatingStatus) }));
    assert.ok(typeof fields === 'object' && fields !== null);
    assert.equal((fields as { message?: string }).message, 'publish failed');
    assert.deepEqual((fields as { cause?: unknown }).cause, {
      type: 'ApiException',
      status: 403,
      reason: 'Forbidden',
      message: terminatingStatus.message,
    });
  });
});

describe('isNamespaceGoing', () => {
  it('recognises a write refused by a terminating namespace, and a namespace gone', () => {
    assert.equal(isNamespaceGoing(clientError(terminatingStatus)), true);
    const withoutCause = { ...terminatingStatus, details: { name: 'x', kind: 'events' } };
    assert.equal(
      isNamespaceGoing(clientError(withoutCause)),
      true,
      'by its message when the cause is absent',
    );
    const gone = {
      kind: 'Status',
      code: 404,
      reason: 'NotFound',
      message: 'namespaces "shop" not found',
      details: { name: 'shop', kind: 'namespaces' },
    };
    assert.equal(isNamespaceGoing(clientError(gone, 404)), true);
  });

  it('does not excuse other refusals', () => {
    const rbac = {
      kind: 'Status',
      code: 403,
      reason: 'Forbidden',
      message: 'events is forbidden: User "x" cannot create resource',
      details: { kind: 'events' },
    };
    assert.equal(isNamespaceGoing(clientError(rbac)), false);
    const podGone = {
      kind: 'Status',
      code: 404,
      reason: 'NotFound',
      message: 'pods "a" not found',
      details: { name: 'a', kind: 'pods' },
    };
    assert.equal(isNamespaceGoing(clientError(podGone, 404)), false);
    assert.equal(isNamespaceGoing(new Error('socket hang up')), false);
  });
});
