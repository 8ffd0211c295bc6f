/**
 * The bounds of every AWS call, ours (lib/aws/aws-json-wire.ts) and the SDK
 * clients' (lib/aws/client-options.ts): apart from client-options.ts, which
 * imports the SDK's HTTP handler (about 16 ms of CPU at import, node:http2
 * included), so that a function that makes no SDK call never loads it.
 */

/** One HTTP attempt, connection included. */
export const DEFAULT_AWS_REQUEST_TIMEOUT_MS = 5_000;
/** Attempts per call, retries included. */
export const DEFAULT_AWS_MAX_ATTEMPTS = 3;
