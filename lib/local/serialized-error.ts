/** An error as it crosses a process boundary: class identity is lost, name and message survive. */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string | undefined;
}

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: typeof error, message: String(error) };
}

/** The error rebuilt on this side of the boundary. */
export function reviveError(error: SerializedError): Error {
  const revived = new Error(error.message);
  revived.name = error.name;
  if (error.stack) revived.stack = error.stack;
  return revived;
}
