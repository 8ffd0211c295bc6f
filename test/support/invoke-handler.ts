/**
 * Runs one invocation of a function's exported `handler` in this process, as
 * Lambda would after a cold start, so that a test can read exactly what the
 * function writes to stdout (its log lines). Used as a child process:
 *
 *   node --import tsx test/support/invoke-handler.ts <module> <functionName> <timeoutMs> <event JSON>
 *
 * The outcome goes to stderr as one `RESULT <json>` line; exit code 0 when the
 * handler resolved, 1 when it threw.
 */
import { pathToFileURL } from 'node:url';
import type { Context } from 'aws-lambda';
import { createLambdaContext } from '../../lib/local/lambda-context.ts';

const [modulePath = '', functionName = '', timeoutMs = '10000', eventJson = '{}'] = process.argv.slice(2);
const mod = (await import(pathToFileURL(modulePath).href)) as {
  handler: (e: unknown, c: Context) => unknown;
};
const controller = new AbortController();
const context = createLambdaContext({
  functionName,
  timeoutMs: Number(timeoutMs),
  signal: controller.signal,
});
setTimeout(() => controller.abort(new Error('deadline')), Number(timeoutMs)).unref();
try {
  const result = await mod.handler(JSON.parse(eventJson), context);
  process.stderr.write(`RESULT ${JSON.stringify({ status: 'ok', result })}\n`);
  process.exitCode = 0;
} catch (err) {
  process.stderr.write(`RESULT ${JSON.stringify({ status: 'error', error: String(err) })}\n`);
  process.exitCode = 1;
}
// Lambda freezes the sandbox here; a child process must end instead of waiting for idle sockets.
setTimeout(() => process.exit(), 200).unref();
