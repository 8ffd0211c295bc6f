import type { Writable } from 'node:stream';

/**
 * Lambda response streaming outside Lambda. Lambda's Node.js runtime gives a
 * streaming handler the globals `awslambda.streamifyResponse` and
 * `awslambda.HttpResponseStream` (aws-lambda-nodejs-runtime-interface-client);
 * middy's streamify execution mode calls them. Where they are missing (tests,
 * `npm start`) this module defines them with the same contract, so the same
 * handler runs unchanged: `streamifyResponse` marks the handler as one taking
 * `(event, responseStream, context)`, and `HttpResponseStream.from` writes
 * the `application/vnd.awslambda.http-integration-response` prelude: the
 * response metadata as JSON, then eight NUL bytes, then the body. In Lambda
 * this module changes nothing.
 */

/** The metadata API Gateway reads from the prelude of a streamed Lambda proxy response. */
export interface HttpResponseMetadata {
  statusCode?: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  cookies?: string[];
}

/** The content type the runtime gives a response that starts with the prelude. */
export const HTTP_INTEGRATION_RESPONSE = 'application/vnd.awslambda.http-integration-response';

/** The eight NUL bytes between the prelude and the body. */
export const PRELUDE_DELIMITER = new Uint8Array(8);

/** The runtime's marker of a streaming handler (aws-lambda-nodejs-runtime-interface-client's HANDLER_STREAMING). */
export const STREAMING_HANDLER = Symbol.for('aws.lambda.runtime.handler.streaming');

/** A response stream as the runtime hands it: a byte stream that may be told its content type. */
export type ResponseStream = Writable & { setContentType?(contentType: string): void };

interface LambdaStreamingGlobals {
  streamifyResponse<H extends object>(handler: H): H;
  HttpResponseStream: { from(stream: ResponseStream, metadata: HttpResponseMetadata): ResponseStream };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The `awslambda` global: the runtime's, one another library started (the AWS SDK's invoke store), or a new one. */
function lambdaGlobal(): Record<string, unknown> {
  const holder: { awslambda?: unknown } = globalThis;
  const awslambda = isRecord(holder.awslambda) ? holder.awslambda : {};
  holder.awslambda = awslambda;
  return awslambda;
}

const emulation: LambdaStreamingGlobals = {
  streamifyResponse(handler) {
    Object.defineProperty(handler, STREAMING_HANDLER, { value: 'response' });
    return handler;
  },
  HttpResponseStream: {
    from(stream, metadata) {
      stream.setContentType?.(HTTP_INTEGRATION_RESPONSE);
      // JSON cannot hold a NUL byte, so the first eight NULs end the prelude.
      stream.write(JSON.stringify(metadata));
      stream.write(PRELUDE_DELIMITER);
      return stream;
    },
  },
};

const awslambda = lambdaGlobal();
if (typeof awslambda.streamifyResponse !== 'function') {
  awslambda.streamifyResponse = emulation.streamifyResponse;
  awslambda.HttpResponseStream = emulation.HttpResponseStream;
}

/** Whether `handler` was made a streaming handler by `streamifyResponse`. */
export function isStreamingHandler(handler: unknown): boolean {
  return typeof handler === 'function' && STREAMING_HANDLER in handler;
}
