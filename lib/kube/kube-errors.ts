/**
 * The API server answered a request with an error status. `code` is the
 * HTTP status and `body` the answer: the API server's Status object, parsed,
 * or the text when it was not JSON (api-error-message.ts reads both). The
 * message is one line: the status, the Status's reason and message, and the
 * request; never headers or the whole body.
 */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';

  constructor(
    readonly code: number,
    readonly body: unknown,
    request: string,
  ) {
    super(`HTTP ${code}${summary(body)} (${request})`);
  }
}

function summary(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const { reason, message } = body as { reason?: unknown; message?: unknown };
  const parts = [typeof reason === 'string' ? reason : '', typeof message === 'string' ? message : ''];
  const text = parts.filter(Boolean).join(': ');
  return text ? ` ${text}` : '';
}

/**
 * A request got no answer: the connection failed (`code` is Node's, such as
 * ECONNREFUSED), or the attempt's timeout or the invocation's deadline
 * aborted it. The cause is the underlying error.
 */
export class KubeRequestError extends Error {
  override readonly name = 'KubeRequestError';
  readonly code: string | undefined;

  constructor(request: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`${request}: ${reason}`, { cause });
    const code = typeof cause === 'object' && cause !== null && 'code' in cause ? cause.code : undefined;
    this.code = typeof code === 'string' ? code : cause instanceof Error ? cause.name : undefined;
  }
}
