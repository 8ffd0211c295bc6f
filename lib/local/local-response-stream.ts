import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { HTTP_INTEGRATION_RESPONSE, type HttpResponseMetadata } from '../response-streaming.ts';

/**
 * The response stream a local streaming invocation writes to, read as API
 * Gateway reads a streamed Lambda proxy response: with the
 * `application/vnd.awslambda.http-integration-response` content type, the
 * bytes up to eight NUL bytes are the JSON metadata (status, headers), the
 * rest is the body, passed on as it arrives. A stream without that content
 * type is a bare 200 body.
 */
export class LocalResponseStream extends Writable {
  private contentType: string | undefined;
  private prelude: Buffer | undefined = Buffer.alloc(0);

  constructor(private readonly res: ServerResponse) {
    super();
    res.on('close', () => this.destroy());
  }

  setContentType(contentType: string): void {
    this.contentType = contentType;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.prelude === undefined) {
      this.forward(chunk, callback);
      return;
    }
    if (this.contentType !== HTTP_INTEGRATION_RESPONSE) {
      this.prelude = undefined;
      this.res.writeHead(200, this.contentType ? { 'content-type': this.contentType } : {});
      this.forward(chunk, callback);
      return;
    }
    const seen = Buffer.concat([this.prelude, chunk]);
    const end = seen.indexOf(Buffer.alloc(8));
    if (end < 0) {
      this.prelude = seen;
      callback();
      return;
    }
    this.prelude = undefined;
    try {
      this.writeHead(JSON.parse(seen.subarray(0, end).toString('utf8')));
    } catch (err) {
      callback(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.forward(seen.subarray(end + 8), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.res.headersSent) this.res.writeHead(200);
    this.res.end(() => callback());
  }

  private writeHead(metadata: HttpResponseMetadata): void {
    const headers: Record<string, string | string[]> = { ...metadata.headers };
    for (const [name, values] of Object.entries(metadata.multiValueHeaders ?? {})) headers[name] = values;
    if (metadata.cookies?.length) headers['set-cookie'] = metadata.cookies;
    this.res.writeHead(metadata.statusCode ?? 200, headers);
  }

  private forward(chunk: Buffer, callback: (error?: Error | null) => void): void {
    if (chunk.length === 0) {
      callback();
      return;
    }
    // Flushed at once: a follow's lines must reach kubectl as they are written.
    if (this.res.write(chunk)) callback();
    else this.res.once('drain', () => callback());
  }
}
