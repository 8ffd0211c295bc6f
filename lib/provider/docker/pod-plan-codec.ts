import * as z from 'zod';
import { PLAN_ENV } from './names.ts';
import type { PodPlan } from './pod-plan.ts';

export { PLAN_ENV };

const portSchema = z.union([z.number(), z.object({ name: z.string() })]);
const hookActionSchema = z.union([
  z.object({ exec: z.object({ command: z.array(z.string()) }) }),
  z.object({
    httpGet: z.object({
      scheme: z.enum(['HTTP', 'HTTPS']),
      host: z.string().optional(),
      path: z.string(),
      port: portSchema,
      headers: z.array(z.object({ name: z.string(), value: z.string() })),
    }),
  }),
]);
const probeSchema = z.object({
  action: z.union([
    hookActionSchema.options[0],
    hookActionSchema.options[1],
    z.object({ tcpSocket: z.object({ host: z.string().optional(), port: portSchema }) }),
  ]),
  initialDelaySeconds: z.number(),
  periodSeconds: z.number(),
  timeoutSeconds: z.number(),
  successThreshold: z.number(),
  failureThreshold: z.number(),
});

const modeSchema = z.number().optional();
/** A file volume's sources: names, keys, paths, modes and downward-API values, never a ConfigMap's or Secret's data nor a token. */
const fileVolumeSchema = z.object({
  defaultMode: z.number(),
  sources: z.array(
    z.union([
      z.object({
        kind: z.enum(['configMap', 'secret']),
        name: z.string(),
        optional: z.boolean(),
        items: z.array(z.object({ key: z.string(), path: z.string(), mode: modeSchema })).optional(),
      }),
      z.object({
        kind: z.literal('downwardAPI'),
        items: z.array(
          z.object({
            path: z.string(),
            mode: modeSchema,
            value: z.string(),
            fieldPath: z.string().optional(),
          }),
        ),
      }),
      z.object({
        kind: z.literal('serviceAccountToken'),
        path: z.string(),
        serviceAccount: z.string(),
        audience: z.string().optional(),
        expirationSeconds: z.number(),
        mode: modeSchema,
      }),
    ]),
  ),
});

const seLinuxSchema = z
  .object({
    user: z.string().optional(),
    role: z.string().optional(),
    type: z.string().optional(),
    level: z.string().optional(),
  })
  .optional();

const containerSchema = z.object({
  name: z.string(),
  image: z.string(),
  pullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  workingDir: z.string().optional(),
  env: z.array(z.string()),
  addressEnv: z
    .array(z.object({ name: z.string(), field: z.enum(['status.podIP', 'status.podIPs', 'status.hostIP']) }))
    .optional(),
  tty: z.boolean(),
  stdin: z.boolean(),
  stdinOnce: z.boolean(),
  mounts: z.array(
    z.object({ volume: z.string(), path: z.string(), readOnly: z.boolean(), subPath: z.string().optional() }),
  ),
  nanoCpus: z.number().optional(),
  memoryBytes: z.number().optional(),
  cpuShares: z.number().optional(),
  user: z.string().optional(),
  groupAdd: z.array(z.string()),
  readOnlyRootfs: z.boolean(),
  noNewPrivileges: z.boolean(),
  capDrop: z.array(z.string()),
  seLinux: seLinuxSchema,
  probes: z
    .object({
      readiness: probeSchema.optional(),
      liveness: probeSchema.optional(),
      startup: probeSchema.optional(),
      postStart: hookActionSchema.optional(),
      preStop: hookActionSchema.optional(),
    })
    .optional(),
  terminationMessage: z.object({ path: z.string(), fallbackToLogs: z.boolean() }).optional(),
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
  volumes: z.array(
    z.object({
      name: z.string(),
      memory: z.boolean(),
      files: fileVolumeSchema.optional(),
      held: z.boolean().optional(),
    }),
  ),
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
  hostAliases: z.array(z.object({ ip: z.string(), hostnames: z.array(z.string()) })).optional(),
  sharePid: z.boolean(),
  seLinux: seLinuxSchema,
  fsGroup: z.number().optional(),
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
