import { ConfigError } from '../config/config.ts';

/**
 * How the node and pod loops run, as serverless.yml's `cadence` parameter:
 * `tick`, short invocations of one function chained through a FIFO queue
 * (lib/tick/); `continuous`, the four scheduled functions that each run for
 * two minutes and overlap.
 */
export type Cadence = 'tick' | 'continuous';

/** Environment variable of `npm start` that picks the cadence (serverless.yml's `cadence` parameter). */
export const CADENCE_VARIABLE = 'SVK_LOCAL_CADENCE';

/** Reads `SVK_LOCAL_CADENCE`: `tick` (unset or empty) or `continuous`; anything else is a ConfigError naming it. */
export function cadenceFromEnv(env: Record<string, string | undefined>): Cadence {
  const raw = env[CADENCE_VARIABLE]?.trim();
  if (!raw) return 'tick';
  if (raw === 'tick' || raw === 'continuous') return raw;
  throw new ConfigError([
    { variable: CADENCE_VARIABLE, message: `must be tick or continuous (got "${raw}")` },
  ]);
}

/** The tick function's timeout in serverless.yml; the queue's visibility timeout is a little longer. */
export const TICK_TIMEOUT_MS = 10_000;
export const TICK_VISIBILITY_TIMEOUT_MS = 12_000;

/** The tick period (the queue's delay): SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS, 10 s when unset or not a whole number. */
export function tickPeriodMs(env: Record<string, string | undefined>): number {
  const raw = env.SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS?.trim() ?? '';
  return /^\d+$/.test(raw) && Number(raw) >= 1 ? Number(raw) * 1000 : 10_000;
}
