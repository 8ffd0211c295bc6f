/** An error answer of a simulated service: AWS JSON's `__type` and message, with its HTTP status. */
export class SimError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
