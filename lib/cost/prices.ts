/**
 * AWS list prices the cost model uses: us-east-1, on-demand, as published
 * in 2026-11 (Lambda arm64, as serverless.yml deploys). Check the current
 * prices before relying on a figure; every one of them is here and nowhere
 * else.
 */
export const PRICES = {
  /** Lambda arm64 duration, per GB-second. */
  lambdaGbSecond: 0.0000133334,
  /** Lambda requests, per invocation. */
  lambdaRequest: 0.2 / 1e6,
  /** SQS FIFO requests (each 64 KB of payload is one), per request. */
  sqsFifoRequest: 0.5 / 1e6,
  /** DynamoDB on-demand write request unit (1 KB written; 2 per item in a transaction). */
  dynamoWriteUnit: 0.625 / 1e6,
  /** DynamoDB on-demand read request unit (4 KB strongly consistent read; half for eventually consistent). */
  dynamoReadUnit: 0.125 / 1e6,
  /** EventBridge custom events put to a bus (each 64 KB is one). */
  eventBridgeEvent: 1.0 / 1e6,
  /** EventBridge scheduled invocations, beyond EventBridge Scheduler's free 14 million (counted as if none were free). */
  scheduledInvocation: 1.0 / 1e6,
  /** CloudWatch Logs ingestion, per byte (0.50 per GB). */
  logIngestionByte: 0.5 / 2 ** 30,
  /** CloudWatch custom metric (a name and dimension set), per month. */
  customMetricMonth: 0.3,
  /** CloudWatch standard-resolution alarm, per month. */
  alarmMonth: 0.1,
  /** CloudWatch dashboard, per month, beyond an account's three free ones. */
  dashboardMonth: 3.0,
} as const;

/** Minutes in the month the figures are priced over (30.4 days). */
export const MINUTES_PER_MONTH = 43_800;

/** Lambda gives one full vCPU at this much memory, and a proportional share below it. */
export const MEMORY_PER_VCPU_MB = 1_769;

/** What Lambda itself writes to a function's log group per invocation (START, END and REPORT lines). */
export const PLATFORM_LOG_BYTES_PER_INVOCATION = 320;

/**
 * Lambda's SQS event source mapping long-polls with up to this many pollers
 * at low traffic (AWS Lambda developer guide, "Configuring scaling behavior
 * for SQS event source mappings": five, optimised down to two), each
 * receive waiting 20 s. Its receives are SQS requests billed to the queue's
 * owner; the model takes the five.
 */
export const SQS_EVENT_SOURCE_POLLERS = 5;
export const SQS_LONG_POLL_SECONDS = 20;
