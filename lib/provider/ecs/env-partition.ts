import type { V1EnvVar } from '@kubernetes/client-node';

/**
 * Where each resolved variable of a container goes (see the contract in
 * lib/provider/provider.ts: every variable has its value, and its
 * `valueFrom` says where it came from):
 *
 * - from a Secret (directly, through envFrom, or expanded into a literal):
 *   an SSM SecureString parameter the task definition's `secrets` names, so
 *   the value itself is in no task definition, RunTask request or record;
 * - from the pod's own fields (the downward API's fieldRef): the RunTask
 *   container override, so replicas still share one task definition;
 * - everything else (literals, ConfigMaps, container resources): the task
 *   definition's `environment`.
 */

/** A Secret's value to store, and where it came from (which names its parameter). */
export interface SecretValue {
  /** The variable's name in the container. */
  variable: string;
  namespace: string;
  secret: string;
  key: string;
  value: string;
}

export interface PartitionedEnv {
  definition: Array<{ name: string; value: string }>;
  overrides: Array<{ name: string; value: string }>;
  secrets: SecretValue[];
}

export function partitionEnv(env: readonly V1EnvVar[], namespace: string): PartitionedEnv {
  const out: PartitionedEnv = { definition: [], overrides: [], secrets: [] };
  for (const variable of env) {
    const value = variable.value ?? '';
    const from = variable.valueFrom;
    if (from?.secretKeyRef) {
      const { name = '', key } = from.secretKeyRef;
      out.secrets.push({ variable: variable.name, namespace, secret: name, key, value });
    } else if (from?.fieldRef) {
      out.overrides.push({ name: variable.name, value });
    } else {
      out.definition.push({ name: variable.name, value });
    }
  }
  return out;
}
