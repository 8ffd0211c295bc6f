/**
 * The function host process (lib/local/function-host.ts): invocations run in a
 * forked sandbox process, errors come back by name and message, and a kill
 * fails what was in flight and cold-starts a new process. Needs no service:
 * every function is configured to fail at cold start.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { FunctionHost } from '../../lib/local/function-host.ts';
import { createLambdaContext } from '../../lib/local/lambda-context.ts';

/** A configuration every function rejects at cold start, so no service is needed. */
const BROKEN_ENV = { SVK_KUBECONFIG: '/nonexistent/kubeconfig', SVK_LOG_LEVEL: 'silent' };

describe('function host', () => {
  const host = new FunctionHost({
    env: BROKEN_ENV,
    putEvents: async () => ({ FailedEntryCount: 0, Entries: [] }),
  });
  after(() => host.stop());
  const invoke = (name: 'pod-sync' | 'heartbeat') =>
    (host.handler(name) as (event: unknown, context: unknown) => Promise<unknown>)(
      {},
      createLambdaContext({ functionName: name, timeoutMs: 30_000 }),
    );

  it('runs an invocation in its process and brings the handler error back, by name and message', async () => {
    await assert.rejects(invoke('heartbeat'), (err: Error) => {
      assert.match(`${err.name}: ${err.message}`, /kubeconfig/i);
      return true;
    });
    assert.equal(host.coldStarts, 1);
  });

  it('fails the invocations in flight with Runtime.ExitError when killed, and cold-starts a new process next', async () => {
    const pid = host.pid;
    const inFlight = invoke('pod-sync');
    await host.kill();
    await assert.rejects(inFlight, { name: 'Runtime.ExitError', message: /signal: SIGKILL/ });
    assert.equal(host.pid, undefined, 'no process after the kill');
    await assert.rejects(invoke('pod-sync'), (err: Error) => err.name !== 'Runtime.ExitError');
    assert.equal(host.coldStarts, 2);
    assert.notEqual(host.pid, pid);
  });
});
