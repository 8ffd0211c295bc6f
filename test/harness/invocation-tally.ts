import type { Invocation, InvocationResult } from '../../lib/local/lambda-function.ts';

/**
 * How the deployment's invocations ended, counted per function and outcome
 * (`ok`, `timeout`, `crashed`, or `error:<name>`, e.g.
 * `error:Runtime.ExitError` for an invocation whose sandbox was killed).
 */
export class InvocationTally {
  readonly #counts = new Map<string, number>();

  record(invocation: Invocation, result: InvocationResult): void {
    const outcome = result.status === 'error' ? `error:${errorName(result.error)}` : result.status;
    const key = `${invocation.functionName} ${outcome}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** How many invocations of `fn` ended with `outcome`. */
  count(fn: string, outcome: string): number {
    return this.#counts.get(`${fn} ${outcome}`) ?? 0;
  }

  /** Every count, as `{ "<function> <outcome>": n }`. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.#counts);
  }
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}
