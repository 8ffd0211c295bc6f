/**
 * What an AWS JSON-protocol service answered outside 2xx, as an error typed
 * by name, read the way the SDK's protocol reads it (@smithy/core's
 * loadJsonRpcErrorCode and sanitizeErrorCode, @aws-sdk/core's
 * AwsJsonRpcProtocol.handleError): the error's type from the body's
 * `__type`, its `code`, or the `x-amzn-errortype` header, stripped of its
 * namespace (`com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException`
 * is `ConditionalCheckFailedException`).
 */

/** TransactionCanceledException's reasons, one per operation of the transaction. */
export type CancellationReasons = Array<{ Code?: string; Message?: string }>;

/** An error an AWS service answered with: `name` is its type (`ConditionalCheckFailedException`...). */
export class AwsServiceError extends Error {
  readonly $metadata: { httpStatusCode: number; attempts: number };
  readonly CancellationReasons?: CancellationReasons;
  /** DynamoDB's item as it stood when a condition failed, when the request asked for it (ReturnValuesOnConditionCheckFailure). */
  readonly Item?: Record<string, unknown>;
  /** An awsQuery-compatible service's (SQS's) code and fault, from `x-amzn-query-error`. */
  readonly Code?: string;
  readonly Type?: string;

  constructor(
    type: string,
    message: string,
    status: number,
    attempts: number,
    details: {
      reasons?: CancellationReasons;
      item?: Record<string, unknown>;
      queryError?: { code: string; type?: string };
    } = {},
  ) {
    super(message);
    this.name = type;
    this.$metadata = { httpStatusCode: status, attempts };
    if (details.reasons) this.CancellationReasons = details.reasons;
    if (details.item) this.Item = details.item;
    if (details.queryError) {
      this.Code = details.queryError.code;
      if (details.queryError.type) this.Type = details.queryError.type;
    }
  }
}

/** A 2xx answer whose body is not a JSON object: nothing the caller could use. */
export class AwsResponseError extends Error {
  override readonly name = 'AwsResponseError';
}

export interface ErrorAnswer {
  status: number;
  /** Header names in lower case, as node:http gives them. */
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * The error of an answer outside 2xx. `service` names the service in the
 * message when the answer carries none; `queryCompatible` services (SQS)
 * put the legacy query code first, as the SDK does.
 */
export function serviceError(
  answer: ErrorAnswer,
  attempts: number,
  options: { service: string; queryCompatible?: boolean },
): AwsServiceError {
  const data = jsonObject(answer.body) ?? {};
  const order = options.queryCompatible
    ? (['code', 'header', 'type'] as const)
    : (['type', 'code', 'header'] as const);
  const type = errorCode(order, data, answer.headers) ?? `HTTP${answer.status}`;
  const message =
    stringField(data, 'message') ??
    stringField(data, 'Message') ??
    `${options.service} answered ${answer.status} (${type})`;
  const reasons = Array.isArray(data.CancellationReasons)
    ? (data.CancellationReasons as CancellationReasons)
    : undefined;
  const item =
    typeof data.Item === 'object' && data.Item !== null && !Array.isArray(data.Item)
      ? (data.Item as Record<string, unknown>)
      : undefined;
  const query = options.queryCompatible ? header(answer.headers, 'x-amzn-query-error') : undefined;
  const [code, fault] = query ? query.split(';') : [];
  return new AwsServiceError(type, message, answer.status, attempts, {
    ...(reasons ? { reasons } : {}),
    ...(item ? { item } : {}),
    ...(code ? { queryError: { code, ...(fault ? { type: fault } : {}) } } : {}),
  });
}

/**
 * A 2xx answer's body as an object (an empty body is `{}`).
 * @throws AwsResponseError when it is not a JSON object.
 */
export function answerObject(body: string, service: string): Record<string, unknown> {
  if (body === '') return {};
  const parsed = jsonObject(body);
  if (!parsed) throw new AwsResponseError(`${service} answered with a body that is not a JSON object`);
  return parsed;
}

function jsonObject(body: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function errorCode(
  order: ReadonlyArray<'type' | 'code' | 'header'>,
  data: Record<string, unknown>,
  headers: ErrorAnswer['headers'],
): string | undefined {
  for (const location of order) {
    const raw =
      location === 'header'
        ? header(headers, 'x-amzn-errortype')
        : location === 'type'
          ? stringField(data, '__type')
          : codeField(data);
    if (raw !== undefined) return sanitize(raw);
  }
  return undefined;
}

/** The body's `code`, whatever its case, as the SDK finds it. */
function codeField(data: Record<string, unknown>): string | undefined {
  const key = Object.keys(data).find((k) => k.toLowerCase() === 'code');
  const value = key === undefined ? undefined : data[key];
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

/** `aws.protocoltests#Name:http://...` and `Name,other` are `Name`. */
function sanitize(raw: string): string {
  let clean = raw;
  if (clean.includes(',')) clean = clean.split(',')[0] ?? clean;
  if (clean.includes(':')) clean = clean.split(':')[0] ?? clean;
  if (clean.includes('#')) clean = clean.split('#')[1] ?? clean;
  return clean;
}

function stringField(data: Record<string, unknown>, key: string): string | undefined {
  const value = data[key];
  return typeof value === 'string' ? value : undefined;
}

function header(headers: ErrorAnswer['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
