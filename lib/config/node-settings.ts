import * as z from 'zod/mini';
import { isQuantity } from '../kube/quantity.ts';
import type { KubeletApiEndpoint } from '../kubelet-api/node-endpoint.ts';
import { addIssue } from '../util/zod-mini.ts';
import { labelValueError, qualifiedNameError, TAINT_EFFECTS, type TaintEffect } from './kube-validation.ts';

/**
 * The virtual nodes' settings and their value rules. The rules are shared by
 * the two places a setting can come from, the environment (the local config,
 * lib/config/env-variables.ts) and an assigned config (a ConfigMap,
 * lib/config/node-config-document.ts), so a value is valid in one exactly when
 * it is valid in the other.
 */

/** A taint the virtual node carries. */
export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
}

/** Settings of the virtual nodes that an assigned config may later override. */
export interface NodeSettings {
  labels: Record<string, string>;
  taints: Taint[];
  /** Capacity (and allocatable) quantities, e.g. `{ cpu: '20', memory: '100Gi', pods: '110' }`. */
  capacity: Record<string, string>;
  operatingSystem: string;
  internalIp?: string;
  /** The port the Node publishes for its kubelet API (443 behind API Gateway). */
  kubeletPort: number;
  /** Where the kubelet API of each node is reached (lib/kubelet-api/node-endpoint.ts); none when off. */
  kubeletApiEndpoint?: KubeletApiEndpoint;
  leaseDurationSeconds: number;
  leaseRenewIntervalMs: number;
  statusIntervalMs: number;
  pingIntervalMs: number;
}

export const DEFAULT_TAINT_KEY = 'virtual-kubelet.io/provider';

/** The taint a node carries when none are configured: only pods that tolerate the provider land on it. */
export function defaultTaint(providerName: string): Taint {
  return { key: DEFAULT_TAINT_KEY, value: providerName, effect: 'NoSchedule' };
}

/** A whole number within [min, max]: the one range rule for a setting, from the environment or a ConfigMap. */
export function bounded(min: number, max: number) {
  return z
    .number({ message: 'must be a whole number' })
    .check(
      z.int('must be a whole number'),
      z.gte(min, `must be at least ${min}`),
      z.lte(max, `must be at most ${max}`),
    );
}

/** Ranges of the node settings given in whole seconds (or a port). */
export const NODE_RANGES = {
  kubeletPort: [1, 65535],
  leaseDurationSeconds: [10, 3600],
  leaseRenewIntervalSeconds: [1, 1200],
  statusIntervalSeconds: [1, 3600],
  pingIntervalSeconds: [1, 600],
} as const satisfies Record<string, readonly [number, number]>;

export const labelsSchema = z.record(z.string(), z.string()).check(
  z.superRefine((labels, ctx) => {
    for (const [key, value] of Object.entries(labels)) {
      const keyError = qualifiedNameError(key);
      if (keyError) ctx.addIssue({ code: 'custom', message: `label key "${key}": ${keyError}` });
      const valueError = labelValueError(value);
      if (valueError)
        ctx.addIssue({ code: 'custom', message: `label "${key}" value "${value}": ${valueError}` });
    }
  }),
);

// YAML writes `cpu: 4` as a number; a quantity is its string form.
const quantityValue = z.union([z.string(), z.pipe(z.number(), z.transform(String))]);

export const capacitySchema = z.record(z.string(), quantityValue).check(
  z.superRefine((capacity, ctx) => {
    for (const [name, quantity] of Object.entries(capacity)) {
      const nameError = qualifiedNameError(name);
      if (nameError) ctx.addIssue({ code: 'custom', message: `resource name "${name}": ${nameError}` });
      if (!isQuantity(quantity)) {
        ctx.addIssue({
          code: 'custom',
          message: `"${name}=${quantity}" is not a resource quantity (e.g. 4, 500m, 16Gi)`,
        });
      }
    }
    if (!('pods' in capacity)) ctx.addIssue({ code: 'custom', message: 'must include pods (e.g. pods=110)' });
  }),
);

function isTaintEffect(effect: string): effect is TaintEffect {
  return TAINT_EFFECTS.some((known) => known === effect);
}

export const taintSchema = z.pipe(
  z.object({ key: z.string(), value: z.optional(z.string()), effect: z.string() }),
  z.transform((t: { key: string; value?: string | undefined; effect: string }, ctx): Taint => {
    const keyError = qualifiedNameError(t.key);
    if (keyError) addIssue(ctx, `taint key "${t.key}": ${keyError}`);
    const valueError = t.value === undefined ? undefined : labelValueError(t.value);
    if (valueError) {
      addIssue(ctx, `taint "${t.key}" value "${t.value}": ${valueError}`);
    }
    if (!isTaintEffect(t.effect)) {
      addIssue(ctx, `taint "${t.key}" effect "${t.effect}" must be one of ${TAINT_EFFECTS.join(', ')}`);
      return z.NEVER;
    }
    return { key: t.key, ...(t.value === undefined ? {} : { value: t.value }), effect: t.effect };
  }),
);

/** Why a lease duration does not fit its renew interval, or undefined. */
export function leaseRuleError(leaseSeconds: number, renewSeconds: number): string | undefined {
  return leaseSeconds > 3 * renewSeconds
    ? undefined
    : `(${leaseSeconds}) must exceed 3 renew intervals (renew interval ${renewSeconds}s)`;
}
