/** The message of a thrown value, for logs, events and status reasons (anything may be thrown, not only an Error). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
