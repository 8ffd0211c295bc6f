/** The pause before retry `attempt` (1 for the first): `baseMs`, doubling each attempt, capped at `maxMs`. */
export function doublingDelayMs(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(baseMs * 2 ** (attempt - 1), maxMs);
}
