import { readFileSync } from 'node:fs';
import { DEFAULT_SCHEMA, load, Type } from 'js-yaml';
import { z } from 'zod';

/** serverless.yml, resolved from this module: for local runs only (a bundle has no such file). */
export const SERVERLESS_YML_PATH = new URL('../../serverless.yml', import.meta.url);

/**
 * Lambda's waits before the retries of an asynchronous invocation whose
 * function failed (an error, a timeout, a crashed runtime): one minute
 * before the first, two before the second ("How Lambda handles errors and
 * retries with asynchronous invocation", AWS Lambda Developer Guide).
 */
export const LAMBDA_ASYNC_RETRY_DELAYS_MS: readonly number[] = [60_000, 120_000];

/**
 * How an event a rule hands to a function is retried when the function
 * fails, as deployed: EventBridge hands the event to Lambda's asynchronous
 * queue (its rule's RetryPolicy covers only that hand-over failing), and
 * Lambda retries a failed invocation `retries` times, then sends the event
 * to the on-failure destination (the dead-letter queue). An event older than
 * `maxEventAgeMs` is not tried again.
 */
export interface AsyncRetryPolicy {
  /** The function's `maximumRetryAttempts`. */
  retries: number;
  /** Wait before each retry; the last repeats. */
  retryDelaysMs: readonly number[];
  /** The function's `maximumEventAge`, in ms. */
  maxEventAgeMs: number;
  /** The rule's `retryPolicy`: retries of the hand-over to Lambda, not of the function. */
  rule: { maximumRetryAttempts: number; maximumEventAgeMs: number };
}

/** Where a value was missing or not a number, and what it should have been. */
export class RetryPolicyError extends Error {
  override readonly name = 'RetryPolicyError';
}

// CloudFormation's short tags: serverless.yml's resources use them; their values do not matter here.
const CLOUDFORMATION_TAGS = ['GetAtt', 'Ref', 'Sub', 'Join', 'If', 'Select', 'Split', 'Equals', 'Not'];
const SCHEMA = DEFAULT_SCHEMA.extend(
  CLOUDFORMATION_TAGS.flatMap((tag) =>
    (['scalar', 'sequence', 'mapping'] as const).map(
      (kind) => new Type(`!${tag}`, { kind, construct: (data: unknown) => ({ [tag]: data }) }),
    ),
  ),
);

const count = z.number().int().nonnegative();
const seconds = z.number().int().positive();
const functionSchema = z.object({
  maximumRetryAttempts: count,
  maximumEventAge: seconds,
  events: z
    .array(z.record(z.string(), z.unknown()))
    .transform((events) => events.flatMap((e) => (e.eventBridge === undefined ? [] : [e.eventBridge])))
    .pipe(
      z
        .array(z.object({ retryPolicy: z.object({ maximumRetryAttempts: count, maximumEventAge: seconds }) }))
        .length(1),
    ),
});

/**
 * The retry policy serverless.yml deploys for `functionName` (its key under
 * `functions`, e.g. `podSync`) and its one EventBridge rule, read from the
 * file itself so that the local bus retries as AWS would.
 * @throws RetryPolicyError naming the field that is missing or not a number.
 */
export function deployedRetryPolicy(
  functionName: string,
  yml: string = readFileSync(SERVERLESS_YML_PATH, 'utf8'),
): AsyncRetryPolicy {
  const doc: unknown = load(yml, { schema: SCHEMA });
  const functions = z.object({ functions: z.record(z.string(), z.unknown()) }).safeParse(doc);
  const raw = functions.success ? functions.data.functions[functionName] : undefined;
  const parsed = functionSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = ['functions', functionName, ...(issue?.path ?? [])].join('.');
    throw new RetryPolicyError(
      `serverless.yml ${where}: ${issue?.message ?? 'missing'} (the local bus retries as it says)`,
    );
  }
  const { maximumRetryAttempts, maximumEventAge, events } = parsed.data;
  const rule = events[0]?.retryPolicy ?? { maximumRetryAttempts: 0, maximumEventAge: 0 };
  return {
    retries: maximumRetryAttempts,
    retryDelaysMs: LAMBDA_ASYNC_RETRY_DELAYS_MS,
    maxEventAgeMs: maximumEventAge * 1000,
    rule: { maximumRetryAttempts: rule.maximumRetryAttempts, maximumEventAgeMs: rule.maximumEventAge * 1000 },
  };
}
