/**
 * The process the local runtime forks for a `child-process` function: it
 * imports the handler module, runs one invocation and reports the outcome over
 * IPC. The parent kills it afterwards (or at the deadline, or to inject a
 * crash), so every invocation in this mode is a cold start in a fresh sandbox.
 */
import { pathToFileURL } from 'node:url';
import type { Context } from 'aws-lambda';
import type { ChildRequest, ChildResponse } from './child-process-invoker.ts';
import { createLambdaContext } from './lambda-context.ts';
import { serializeError } from './serialized-error.ts';

function send(message: ChildResponse): void {
  process.send?.(message);
}

async function run(request: ChildRequest): Promise<void> {
  const url = request.module.startsWith('file:') ? request.module : pathToFileURL(request.module).href;
  const mod = (await import(url)) as Record<string, unknown>;
  const handler = mod[request.exportName];
  if (typeof handler !== 'function') {
    throw new TypeError(`${request.module} has no exported function ${request.exportName}`);
  }
  const controller = new AbortController();
  const context = createLambdaContext({ ...request.context, signal: controller.signal });
  // The parent kills this process at the deadline; the signal is for code that checks it first.
  setTimeout(() => controller.abort(new Error('deadline')), context.getRemainingTimeInMillis()).unref();
  const result: unknown = await (handler as (event: unknown, context: Context) => unknown)(
    request.event,
    context,
  );
  send({ type: 'result', status: 'ok', result: result === undefined ? null : result });
}

// An orphan must not outlive the test run that forked it.
process.on('disconnect', () => process.exit(1));
process.once('message', (request: ChildRequest) => {
  run(request).catch((error: unknown) =>
    send({ type: 'result', status: 'error', error: serializeError(error) }),
  );
});
send({ type: 'ready' });
