import type { Context } from 'aws-lambda';

/**
 * The fields of an invocation's log lines that tell which Lambda invocation
 * wrote them, named as Powertools for AWS Lambda's Logger names them (its
 * "standard structured keys" and "Lambda context" keys), so that a query
 * written for Powertools' logs (`filter cold_start = 1`, `filter
 * function_request_id = "<id>"`) reads ours. `service` and `function_name`
 * are on every line of the function, the invocation's own ones too: the root
 * logger's base (lib/app/dependencies.ts).
 */
export interface LambdaLogFields {
  /** Whether this invocation built the function's dependencies (lib/handler/cold-start.ts). */
  cold_start: boolean;
  function_arn: string;
  function_memory_size: number;
  function_request_id: string;
  /** The trace's `Root`, when Lambda gave the invocation one (`_X_AMZN_TRACE_ID`). */
  xray_trace_id?: string;
}

/**
 * The `Root` of an X-Ray trace header (`Root=1-5759e988-bd862e3fe1be46a994272793;Parent=...;Sampled=1`),
 * the trace id as Powertools logs it; undefined without one.
 */
export function xrayTraceId(header: string | undefined): string | undefined {
  const root = header ? /(?:^|;)\s*Root=([^;\s]+)/.exec(header)?.[1] : undefined;
  return root || undefined;
}

/**
 * The fields of one invocation, from its Lambda context, whether it is the
 * cold start, and the runtime's trace header of this invocation.
 */
export function lambdaLogFields(context: Context, coldStart: boolean, traceHeader?: string): LambdaLogFields {
  const traceId = xrayTraceId(traceHeader);
  return {
    cold_start: coldStart,
    function_arn: context.invokedFunctionArn,
    function_memory_size: Number(context.memoryLimitInMB),
    function_request_id: context.awsRequestId,
    ...(traceId ? { xray_trace_id: traceId } : {}),
  };
}
