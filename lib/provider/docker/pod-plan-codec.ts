import * as z from 'zod';
import type { PodPlan } from './pod-plan.ts';

/**
 * The plan travels in the infra container's environment (`SVK_POD_PLAN=`),
 * not in a label: labels are repeated in every engine event and list, and
 * the plan holds the containers' env, which may come from Secrets. Whoever
 * can inspect containers on the engine can read it, exactly as they can read
 * the env of the containers themselves (the provider's trust boundary).
 */
export const PLAN_ENV = 'SVK_POD_PLAN';

const containerSchema = z.object({
  name: z.string(),
  image: z.string(),
  pullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  workingDir: z.string().optional(),
  env: z.array(z.string()),
  tty: z.boolean(),
  stdin: z.boolean(),
  stdinOnce: z.boolean(),
  mounts: z.array(z.object({ volume: z.string(), path: z.string(), readOnly: z.boolean() })),
  nanoCpus: z.number().optional(),
  memoryBytes: z.number().optional(),
  cpuShares: z.number().optional(),
  user: z.string().optional(),
  groupAdd: z.array(z.string()),
  readOnlyRootfs: z.boolean(),
  noNewPrivileges: z.boolean(),
  capDrop: z.array(z.string()),
});

const planSchema = z.object({
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
  node: z.string(),
  restartPolicy: z.enum(['Always', 'OnFailure', 'Never']),
  hostname: z.string(),
  domainname: z.string().optional(),
  initContainers: z.array(containerSchema),
  containers: z.array(containerSchema),
  volumes: z.array(z.object({ name: z.string(), memory: z.boolean() })),
  hostPorts: z.array(
    z.object({
      containerPort: z.number(),
      hostPort: z.number(),
      protocol: z.string(),
      hostIp: z.string().optional(),
    }),
  ),
  dns: z
    .object({ nameservers: z.array(z.string()), searches: z.array(z.string()), options: z.array(z.string()) })
    .optional(),
  extraHosts: z.array(z.string()),
  sharePid: z.boolean(),
  gracePeriodSeconds: z.number(),
  imagePullSecrets: z.array(z.string()),
});

export function planEnv(plan: PodPlan): string {
  return `${PLAN_ENV}=${JSON.stringify(plan)}`;
}

/** The plan in an infra container's env, or undefined when it has none or it is malformed. */
export function planFromEnv(env: readonly string[] | null | undefined): PodPlan | undefined {
  const entry = env?.find((e) => e.startsWith(`${PLAN_ENV}=`));
  if (!entry) return undefined;
  try {
    const parsed = planSchema.safeParse(JSON.parse(entry.slice(PLAN_ENV.length + 1)));
    return parsed.success ? (parsed.data satisfies PodPlan) : undefined;
  } catch {
    return undefined;
  }
}
