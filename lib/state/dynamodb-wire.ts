import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { DEFAULT_AWS_MAX_ATTEMPTS, DEFAULT_AWS_REQUEST_TIMEOUT_MS } from '../aws/client-options.ts';
import { currentDeadline } from '../deadline.ts';
import { type RetryQuota, retryDelayMs, retryKind } from './dynamodb-retry.ts';

/**
 * DynamoDB's JSON protocol (`application/x-amz-json-1.0`, one POST per
 * operation, SigV4-signed), spoken directly instead of through the SDK
 * client's middleware stack, which costs several times more CPU per call
 * than the call itself (bench/README.md, "The pod pipeline's CPU").
 * Everything that is not per call stays the SDK's: the client's resolved
 * credentials (its provider chain, refreshed as it refreshes them), region
 * and endpoint. What the SDK client does per call is done here the same
 * way: the attempt timeout and the invocation's deadline of
 * lib/aws/client-options.ts, and the standard retry strategy (retryable
 * errors, backoff with full jitter, a retry quota) of lib/state/dynamodb-retry.ts.
 * Not done: the SDK's clock-skew correction (Lambda's clock is kept in sync)
 * and endpoint discovery (DynamoDB's is off by default).
 */

export interface DynamoDbWireOptions {
  /** One HTTP attempt, connection included. Default 5000. */
  requestTimeoutMs?: number;
  /** Attempts per call, retries included. Default 3. */
  maxAttempts?: number;
}

/** An error DynamoDB answered with: `name` is its type (`ConditionalCheckFailedException`...). */
export class DynamoDbServiceError extends Error {
  readonly $metadata: { httpStatusCode: number; attempts: number };
  /** TransactionCanceledException's reasons, one per operation of the transaction. */
  readonly CancellationReasons?: Array<{ Code?: string; Message?: string }>;

  constructor(
    type: string,
    message: string,
    status: number,
    attempts: number,
    reasons?: Array<{ Code?: string; Message?: string }>,
  ) {
    super(message);
    this.name = type;
    this.$metadata = { httpStatusCode: status, attempts };
    if (reasons) this.CancellationReasons = reasons;
  }
}

/** A DynamoDB call's answer, as parsed JSON (attribute values still marshalled). */
export type WireOutput = Record<string, unknown>;

interface Target {
  protocol: string;
  hostname: string;
  port: number | undefined;
  path: string;
  region: string;
}

export class DynamoDbWire {
  readonly #client: DynamoDBClient;
  readonly #timeoutMs: number;
  readonly #maxAttempts: number;
  readonly #quota: RetryQuota = { tokens: 500 };
  readonly #agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  #target: Promise<{ target: Target; signer: SignatureV4 }> | undefined;

  constructor(client: DynamoDBClient, options: DynamoDbWireOptions = {}) {
    this.#client = client;
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_AWS_REQUEST_TIMEOUT_MS;
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_AWS_MAX_ATTEMPTS;
  }

  /**
   * Calls `operation` (GetItem, UpdateItem...) with `input` as DynamoDB's
   * API takes it. Retries what the SDK retries, within `maxAttempts` and the
   * retry quota, never past the invocation's deadline.
   * @throws DynamoDbServiceError for an error DynamoDB answered with.
   */
  async send(operation: string, input: Record<string, unknown>): Promise<WireOutput> {
    const { target, signer } = await this.#resolve();
    const body = JSON.stringify(input);
    let spent = 0;
    for (let attempt = 1; ; attempt++) {
      const deadline = currentDeadline();
      if (deadline?.aborted) throw abortError(deadline);
      try {
        const output = await this.#attempt(target, signer, operation, body, attempt, deadline);
        this.#quota.tokens = Math.min(500, this.#quota.tokens + (spent > 0 ? spent : 1));
        return output;
      } catch (err) {
        const kind = retryKind(err);
        const cost = kind === 'timeout' ? 10 : 5;
        if (!kind || attempt >= this.#maxAttempts || deadline?.aborted || this.#quota.tokens < cost)
          throw err;
        this.#quota.tokens -= cost;
        spent += cost;
        await pause(retryDelayMs(kind, attempt), deadline);
      }
    }
  }

  async #attempt(
    target: Target,
    signer: SignatureV4,
    operation: string,
    body: string,
    attempt: number,
    deadline: AbortSignal | undefined,
  ): Promise<WireOutput> {
    const host = target.port === undefined ? target.hostname : `${target.hostname}:${target.port}`;
    const signed = await signer.sign({
      method: 'POST',
      protocol: target.protocol,
      hostname: target.hostname,
      ...(target.port === undefined ? {} : { port: target.port }),
      path: target.path,
      query: {},
      headers: {
        host,
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `DynamoDB_20120810.${operation}`,
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    });
    const { status, text } = await this.#post(target, signed.headers, body, deadline);
    const parsed: unknown = text === '' ? {} : JSON.parse(text);
    const output = typeof parsed === 'object' && parsed !== null ? (parsed as WireOutput) : {};
    if (status >= 200 && status < 300) return output;
    throw serviceError(output, status, attempt);
  }

  /** One HTTP POST, destroyed after the attempt timeout (TimeoutError) or at the deadline (AbortError). */
  #post(
    target: Target,
    headers: Record<string, string>,
    body: string,
    deadline: AbortSignal | undefined,
  ): Promise<{ status: number; text: string }> {
    const https = target.protocol === 'https:';
    const send = https ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        {
          method: 'POST',
          hostname: target.hostname,
          ...(target.port === undefined ? {} : { port: target.port }),
          path: target.path,
          headers,
          agent: https ? this.#agents.https : this.#agents.http,
          ...(deadline ? { signal: deadline } : {}),
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      const timer = setTimeout(() => {
        const err = new Error(`DynamoDB did not answer within ${this.#timeoutMs} ms`);
        err.name = 'TimeoutError';
        req.destroy(err);
      }, this.#timeoutMs);
      req.on('close', () => clearTimeout(timer));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The endpoint and the signer, resolved once from the client's configuration. */
  #resolve(): Promise<{ target: Target; signer: SignatureV4 }> {
    this.#target ??= this.#resolveOnce().catch((err: unknown) => {
      this.#target = undefined;
      throw err;
    });
    return this.#target;
  }

  async #resolveOnce(): Promise<{ target: Target; signer: SignatureV4 }> {
    const config = this.#client.config;
    const region = await config.region();
    let url: URL;
    const custom = config.endpoint ? await config.endpoint() : undefined;
    if (custom) {
      url = new URL(
        `${custom.protocol}//${custom.hostname}${custom.port ? `:${custom.port}` : ''}${custom.path}`,
      );
    } else {
      const resolved = config.endpointProvider({
        Region: region,
        UseFIPS: await config.useFipsEndpoint(),
        UseDualStack: await config.useDualstackEndpoint(),
      });
      url = resolved.url;
    }
    const target: Target = {
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: url.pathname || '/',
      region,
    };
    const signer = new SignatureV4({
      service: 'dynamodb',
      region,
      credentials: config.credentials,
      sha256: Hash.bind(null, 'sha256'),
    });
    return { target, signer };
  }
}

function serviceError(output: WireOutput, status: number, attempts: number): DynamoDbServiceError {
  const rawType = typeof output.__type === 'string' ? output.__type : `HTTP${status}`;
  const type = rawType.slice(rawType.lastIndexOf('#') + 1);
  const message =
    typeof output.message === 'string'
      ? output.message
      : typeof output.Message === 'string'
        ? output.Message
        : `DynamoDB answered ${status}`;
  const reasons = Array.isArray(output.CancellationReasons)
    ? (output.CancellationReasons as Array<{ Code?: string; Message?: string }>)
    : undefined;
  return new DynamoDbServiceError(type, message, status, attempts, reasons);
}

/** How a call ends at the invocation's deadline: an AbortError, as the SDK's request handler ends it (never retried). */
function abortError(signal: AbortSignal): Error {
  const err = new Error('Request aborted: the invocation reached its deadline', { cause: signal.reason });
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
