import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * The schemas the functions build at cold start (the configuration, the
 * events they take) use zod/mini, which is zod's own engine with a lighter
 * API: its schemas cost a fraction to build and its code about a quarter of
 * full zod's (docs/benchmarks.md, "Cold start"). zod/mini loads no locale, so
 * every built-in check would say only "Invalid input": this module loads
 * English, as full zod does when imported. Every module with such schemas
 * imports it.
 */
z.config(en());

/**
 * Reports a problem from inside `z.transform` (full zod's `ctx.addIssue`,
 * which zod/mini's transforms do not have): a custom issue on the value.
 */
export function addIssue(payload: z.core.ParsePayload, message: string): void {
  payload.issues.push({ code: 'custom', message, input: payload.value });
}
