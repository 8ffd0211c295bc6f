/**
 * Waiting for control-plane components: a poll with a deadline that gives up
 * early when the component's process exits, and the checks each component is
 * waited on (etcd /health, /readyz and /healthz, the API server's namespaces,
 * the controller manager's service-account tokens).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import type { CoreV1Api } from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.ts';
import { errorMessage } from '../../util/error-message.ts';
import { ControlPlaneStartError } from './start-error.ts';

const PROBE_INTERVAL_MS = 200;
const PROBE_TIMEOUT_MS = 3_000;

/** What a wait needs of a component: whether it still runs, and its log for the error message. */
export interface WatchedProcess {
  readonly name: string;
  readonly running: boolean;
  readonly exitStatus: string | undefined;
  readonly logPath: string;
  logTail(): string;
}

/** A readiness check: true when ready; a throw counts as not ready yet and is reported at the deadline. */
export type Check = () => Promise<boolean>;

/**
 * Polls `check` until true.
 * @throws ControlPlaneStartError with the log tail of `component` when it
 * exits first, or at the deadline.
 */
export async function waitFor(
  what: string,
  timeoutMs: number,
  component: WatchedProcess,
  check: Check,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    if (!component.running) {
      throw new ControlPlaneStartError(
        `${component.name} exited (${component.exitStatus ?? 'not started'}) while waiting for ${what}; ` +
          `log ${component.logPath}:\n${component.logTail()}`,
      );
    }
    try {
      if (await check()) return;
      lastError = '';
    } catch (err) {
      lastError = errorMessage(err);
    }
    if (Date.now() > deadline) {
      throw new ControlPlaneStartError(
        `timed out after ${timeoutMs / 1000}s waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}; ` +
          `log ${component.logPath}:\n${component.logTail()}`,
      );
    }
    await delay(PROBE_INTERVAL_MS);
  }
}

/** {@link waitFor} the component's own readiness. */
export function waitReady(component: WatchedProcess, timeoutMs: number, check: Check): Promise<void> {
  return waitFor(`${component.name} readiness`, timeoutMs, component, check);
}

/** etcd answers `/health` with `"health":"true"`. */
export function etcdHealthy(clientUrl: string): Check {
  return () => probe(`${clientUrl}/health`, {}).then((r) => r.status === 200 && r.body.includes('"true"'));
}

/** An https health endpoint (`/readyz`, `/healthz`) answers 200; verified against `ca`. */
export function endpointOk(url: string, options: { ca: Buffer; token?: string }): Check {
  return () => probe(url, options).then((r) => r.status === 200);
}

/** The namespace exists (the API server creates its system namespaces right after it turns ready). */
export function namespaceExists(core: CoreV1Api, name: string): Check {
  return async () => {
    try {
      await core.readNamespace({ name });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  };
}

/**
 * The service account has a token secret: the controller manager's token
 * controller works, the sign that pods can be admitted (ServiceAccount admission).
 */
export function serviceAccountHasToken(core: CoreV1Api, namespace: string, name: string): Check {
  return async () => {
    try {
      const sa = await core.readNamespacedServiceAccount({ name, namespace });
      return (sa.secrets?.length ?? 0) > 0;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  };
}

interface ProbeResult {
  status: number;
  body: string;
}

/** One GET with a short timeout; https URLs verify against `ca`. */
function probe(url: string, options: { ca?: Buffer; token?: string }): Promise<ProbeResult> {
  return new Promise((resolveProbe, reject) => {
    const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
    const callback = (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolveProbe({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:')
      ? httpsRequest(url, { method: 'GET', headers, ca: options.ca, timeout: PROBE_TIMEOUT_MS }, callback)
      : httpRequest(url, { method: 'GET', headers, timeout: PROBE_TIMEOUT_MS }, callback);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
