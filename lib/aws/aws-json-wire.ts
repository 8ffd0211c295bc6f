import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { currentDeadline } from '../deadline.ts';
import { answerObject, type ErrorAnswer, serviceError } from './aws-json-errors.ts';
import { RetryQuota, retryDelayMs, retryKind } from './aws-retry.ts';
import type { CredentialProvider } from './credentials.ts';
import { DEFAULT_AWS_MAX_ATTEMPTS, DEFAULT_AWS_REQUEST_TIMEOUT_MS } from './defaults.ts';
import { SigV4Signer } from './sigv4.ts';

/**
 * The AWS JSON protocol (`application/x-amz-json-1.0`: one SigV4-signed
 * POST per operation, named by the `X-Amz-Target` header), spoken directly
 * for the services our functions call on every invocation, DynamoDB
 * (lib/state/) and SQS (lib/tick/sqs-tick-queue.ts), instead of through the
 * SDK clients: importing a client costs a cold start about 50-60 ms of CPU
 * and its middleware stack costs several times more CPU per call than the
 * call itself (docs/benchmarks.md, "Cold start" and "Where the deployment's CPU goes").
 * Requests are signed by lib/aws/sigv4.ts. What the SDK clients give per
 * call is done here the same way: the attempt
 * timeout and the invocation's deadline of lib/aws/client-options.ts, and
 * the standard retry strategy (retryable errors, backoff with full jitter, a
 * retry quota) of lib/aws/aws-retry.ts. Not done: the SDK's clock-skew
 * correction (Lambda's clock is kept in sync) and DynamoDB's endpoint
 * discovery (off by default in the SDK).
 */

/** What differs between the services spoken this way. */
export interface AwsJsonService {
  /** In messages: `DynamoDB`, `SQS`. */
  name: string;
  /** SigV4's service name: `dynamodb`, `sqs`. */
  signingName: string;
  /** `X-Amz-Target` is `<targetPrefix>.<operation>`: `DynamoDB_20120810`, `AmazonSQS`. */
  targetPrefix: string;
  /** SQS: answers carry the legacy query error code too (`x-amzn-query-mode`). */
  queryCompatible?: boolean;
  /** Errors the service's model marks retryable (the SDK reads that trait from its schemas). */
  retryable?: ReadonlySet<string>;
}

/** Where and as whom the calls go: resolved once per wire, at its first call. */
export interface AwsEndpoint {
  /** Origin and path (`/`) the POSTs go to. */
  url: URL;
  /** The region signed for. */
  region: string;
  credentials: CredentialProvider;
}

export interface AwsJsonWireOptions {
  /** One HTTP attempt, connection included. Default 5000. */
  requestTimeoutMs?: number;
  /** Attempts per call, retries included. Default 3. */
  maxAttempts?: number;
}

/** A call's answer, as parsed JSON (DynamoDB's attribute values still marshalled). */
export type WireOutput = Record<string, unknown>;

interface Resolved {
  url: URL;
  credentials: CredentialProvider;
  signer: SigV4Signer;
}

export class AwsJsonWire {
  readonly #service: AwsJsonService;
  readonly #endpoint: () => Promise<AwsEndpoint>;
  readonly #timeoutMs: number;
  readonly #maxAttempts: number;
  readonly #quota = new RetryQuota();
  readonly #agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  #resolved: Promise<Resolved> | undefined;

  /** `endpoint` is asked once, at the first call (again after it failed). */
  constructor(
    service: AwsJsonService,
    endpoint: () => Promise<AwsEndpoint>,
    options: AwsJsonWireOptions = {},
  ) {
    this.#service = service;
    this.#endpoint = endpoint;
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_AWS_REQUEST_TIMEOUT_MS;
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_AWS_MAX_ATTEMPTS;
  }

  /**
   * Calls `operation` (GetItem, SendMessage...) with `input` as the service's
   * API takes it. Retries what the SDK retries, within `maxAttempts` and the
   * retry quota, never past the invocation's deadline nor after `signal`.
   * @throws AwsServiceError for an error the service answered with;
   *   TimeoutError, AbortError or the network's error for no answer.
   */
  async send(operation: string, input: Record<string, unknown>, signal?: AbortSignal): Promise<WireOutput> {
    const resolved = await this.#resolve();
    const body = JSON.stringify(input);
    let lastCost: number | undefined;
    for (let attempt = 1; ; attempt++) {
      const abort = abortSignalOf(currentDeadline(), signal);
      if (abort?.aborted) throw abortError(abort);
      try {
        const output = await this.#attempt(resolved, operation, body, attempt, abort);
        this.#quota.release(lastCost);
        return output;
      } catch (err) {
        const kind = retryKind(err, this.#service.retryable);
        if (!kind || attempt >= this.#maxAttempts || abort?.aborted) throw err;
        const cost = this.#quota.take(kind);
        if (cost === undefined) throw err;
        lastCost = cost;
        await pause(retryDelayMs(kind, attempt), abort);
      }
    }
  }

  async #attempt(
    { url, credentials, signer }: Resolved,
    operation: string,
    body: string,
    attempt: number,
    abort: AbortSignal | undefined,
  ): Promise<WireOutput> {
    const headers = signer.sign(
      {
        method: 'POST',
        host: url.host,
        path: url.pathname,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': `${this.#service.targetPrefix}.${operation}`,
          ...(this.#service.queryCompatible ? { 'x-amzn-query-mode': 'true' } : {}),
          'content-length': String(Buffer.byteLength(body)),
        },
        body,
      },
      await credentials(),
    );
    const answer = await this.#post(url, headers, body, abort);
    if (answer.status >= 200 && answer.status < 300) return answerObject(answer.body, this.#service.name);
    throw serviceError(answer, attempt, {
      service: this.#service.name,
      ...(this.#service.queryCompatible ? { queryCompatible: true } : {}),
    });
  }

  /** One HTTP POST, destroyed after the attempt timeout (TimeoutError) or when `abort` fires (AbortError). */
  #post(
    url: URL,
    headers: Record<string, string>,
    body: string,
    abort: AbortSignal | undefined,
  ): Promise<ErrorAnswer> {
    const https = url.protocol === 'https:';
    const send = https ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        {
          method: 'POST',
          hostname: url.hostname,
          ...(url.port === '' ? {} : { port: Number(url.port) }),
          path: url.pathname,
          headers,
          agent: https ? this.#agents.https : this.#agents.http,
          ...(abort ? { signal: abort } : {}),
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      const timer = setTimeout(() => {
        const err = new Error(`${this.#service.name} did not answer within ${this.#timeoutMs} ms`);
        err.name = 'TimeoutError';
        req.destroy(err);
      }, this.#timeoutMs);
      req.on('close', () => clearTimeout(timer));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The endpoint and the signer, resolved once. */
  #resolve(): Promise<Resolved> {
    this.#resolved ??= this.#endpoint().then(
      (endpoint) => ({
        url: endpoint.url,
        credentials: endpoint.credentials,
        signer: new SigV4Signer({ service: this.#service.signingName, region: endpoint.region }),
      }),
      (err: unknown) => {
        this.#resolved = undefined;
        throw err;
      },
    );
    return this.#resolved;
  }
}

/** The invocation's deadline and the caller's signal, whichever fires first. */
function abortSignalOf(deadline: AbortSignal | undefined, signal: AbortSignal | undefined) {
  if (deadline && signal) return AbortSignal.any([deadline, signal]);
  return deadline ?? signal;
}

/** What an aborted call throws, whatever aborted it: an AbortError, never retried, as the SDK's. */
function abortError(signal: AbortSignal): Error {
  const err = new Error('Request aborted', { cause: signal.reason });
  err.name = 'AbortError';
  return err;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      if (signal) reject(abortError(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
