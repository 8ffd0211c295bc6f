import type { V1Pod } from '@kubernetes/client-node';
import * as z from 'zod/mini';
import '../../util/zod-mini.ts';

/**
 * Per-pod overrides of the task's network, role and capacity, through
 * annotations, each allowed only where the configuration's allowlist says.
 * Without the allowlist anyone who may create a pod on a virtual node could
 * run it with any task role the deployment may pass (a privilege
 * escalation), or in any subnet and security group it may name.
 */

const PREFIX = 'ecs.serverless-virtual-kubelet.io/';

/** An IAM role ARN: the task role of this pod instead of the configured one. */
export const TASK_ROLE_ANNOTATION = `${PREFIX}task-role-arn`;
/** Comma-separated subnet ids: the pod's ENI goes into one of these instead. */
export const SUBNETS_ANNOTATION = `${PREFIX}subnets`;
/** Comma-separated security group ids for the pod's ENI instead of the configured ones. */
export const SECURITY_GROUPS_ANNOTATION = `${PREFIX}security-groups`;
/** `"true"`: run on FARGATE_SPOT; `"false"`: on FARGATE (whatever the configured capacity provider). */
export const SPOT_ANNOTATION = `${PREFIX}spot`;

const KNOWN = new Set([
  TASK_ROLE_ANNOTATION,
  SUBNETS_ANNOTATION,
  SECURITY_GROUPS_ANNOTATION,
  SPOT_ANNOTATION,
]);

/** One allowlist entry: what pods of a namespace (and ServiceAccount) may ask for. */
export interface OverrideRule {
  namespace: string;
  /** Only pods running as this ServiceAccount; every pod of the namespace when absent. */
  serviceAccount?: string;
  taskRoleArns: readonly string[];
  subnets: readonly string[];
  securityGroups: readonly string[];
  /** Whether the spot annotation may be used. */
  spot: boolean;
}

/** Strings that each match `pattern`; none when not given. */
function strings(pattern: RegExp, message: string) {
  return z._default(z.array(z.string().check(z.regex(pattern, message))), []);
}

const ruleSchema = z.strictObject({
  namespace: z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a namespace name')),
  serviceAccount: z.optional(
    z.string().check(z.regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'must be a ServiceAccount name')),
  ),
  taskRoleArns: strings(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, 'must be IAM role ARNs'),
  subnets: strings(/^subnet-[0-9a-f]{8,17}$/, 'must be subnet ids'),
  securityGroups: strings(/^sg-[0-9a-f]{8,17}$/, 'must be security group ids'),
  spot: z._default(z.boolean(), false),
});

/**
 * Reads `SVK_ECS_OVERRIDE_ALLOWLIST`: a JSON array of rules, e.g.
 * `[{"namespace":"payments","serviceAccount":"api","taskRoleArns":["arn:aws:iam::123456789012:role/payments-api"],"spot":true}]`.
 * Empty or absent: no pod may override anything.
 */
export function parseOverrideAllowlist(
  raw: string | undefined,
): { ok: true; rules: OverrideRule[] } | { ok: false; issues: string[] } {
  if (raw === undefined || raw.trim() === '') return { ok: true, rules: [] };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, issues: ['must be a JSON array of rules'] };
  }
  const parsed = z.array(ruleSchema, { message: 'must be a JSON array of rules' }).safeParse(json);
  if (!parsed.success)
    return {
      ok: false,
      issues: parsed.error.issues.map((i) =>
        i.path.length ? `[${i.path.join('.')}] ${i.message}` : i.message,
      ),
    };
  return { ok: true, rules: parsed.data.map((r) => ({ ...r })) };
}

/** What a pod's annotations change about its task. */
export interface PodOverrides {
  taskRoleArn?: string;
  subnets?: readonly string[];
  securityGroups?: readonly string[];
  spot?: boolean;
}

/** Whether `rule` grants every override of `asked`. */
function grantsAll(rule: OverrideRule, asked: PodOverrides): boolean {
  return (
    (asked.taskRoleArn === undefined || rule.taskRoleArns.includes(asked.taskRoleArn)) &&
    (asked.subnets ?? []).every((s) => rule.subnets.includes(s)) &&
    (asked.securityGroups ?? []).every((g) => rule.securityGroups.includes(g)) &&
    (asked.spot === undefined || rule.spot)
  );
}

/**
 * The overrides a pod asks for, or every reason it may not: an unknown
 * annotation under the prefix, a malformed value, a value no rule matching
 * the pod's namespace and ServiceAccount allows, or values that several
 * rules allow between them but no one rule allows together. One rule must
 * grant all of a pod's overrides: rules are grants to a kind of workload
 * (this task role in these subnets), and their union would let a pod
 * combine one rule's task role with another rule's network, which no rule
 * allows.
 */
export function podOverrides(
  pod: V1Pod,
  rules: readonly OverrideRule[],
): { ok: true; overrides: PodOverrides } | { ok: false; reasons: string[] } {
  const annotations = pod.metadata?.annotations ?? {};
  const namespace = pod.metadata?.namespace ?? '';
  const serviceAccount = pod.spec?.serviceAccountName ?? 'default';
  const matching = rules.filter(
    (r) =>
      r.namespace === namespace && (r.serviceAccount === undefined || r.serviceAccount === serviceAccount),
  );
  const who = `namespace ${namespace}, ServiceAccount ${serviceAccount}`;
  const reasons: string[] = [];
  const asked: PodOverrides = {};
  for (const key of Object.keys(annotations))
    if (key.startsWith(PREFIX) && !KNOWN.has(key)) reasons.push(`annotation ${key}: unknown`);
  const role = annotations[TASK_ROLE_ANNOTATION]?.trim();
  if (role !== undefined) {
    if (matching.some((r) => r.taskRoleArns.includes(role))) asked.taskRoleArn = role;
    else reasons.push(`annotation ${TASK_ROLE_ANNOTATION}: ${role} is not allowed for ${who}`);
  }
  const lists = [
    [SUBNETS_ANNOTATION, 'subnets', (r: OverrideRule) => r.subnets],
    [SECURITY_GROUPS_ANNOTATION, 'securityGroups', (r: OverrideRule) => r.securityGroups],
  ] as const;
  for (const [key, field, allowed] of lists) {
    const raw = annotations[key];
    if (raw === undefined) continue;
    const values = raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    const refused = values.filter((v) => !matching.some((r) => allowed(r).includes(v)));
    if (values.length === 0) reasons.push(`annotation ${key}: is empty`);
    else if (refused.length > 0)
      reasons.push(`annotation ${key}: ${refused.join(', ')} not allowed for ${who}`);
    else asked[field] = values;
  }
  const spot = annotations[SPOT_ANNOTATION]?.trim();
  if (spot !== undefined) {
    if (spot !== 'true' && spot !== 'false')
      reasons.push(`annotation ${SPOT_ANNOTATION}: must be "true" or "false"`);
    else if (!matching.some((r) => r.spot))
      reasons.push(`annotation ${SPOT_ANNOTATION}: not allowed for ${who}`);
    else asked.spot = spot === 'true';
  }
  if (reasons.length > 0) return { ok: false, reasons };
  if (Object.keys(asked).length > 0 && !matching.some((r) => grantsAll(r, asked)))
    return {
      ok: false,
      reasons: [
        `annotations ${overrideNames(asked).join(', ')}: each is allowed for ${who} by some allowlist rule, but no one rule allows them together`,
      ],
    };
  return { ok: true, overrides: asked };
}

/** The annotations behind `asked`, in a stable order. */
function overrideNames(asked: PodOverrides): string[] {
  return [
    ...(asked.taskRoleArn !== undefined ? [TASK_ROLE_ANNOTATION] : []),
    ...(asked.subnets ? [SUBNETS_ANNOTATION] : []),
    ...(asked.securityGroups ? [SECURITY_GROUPS_ANNOTATION] : []),
    ...(asked.spot !== undefined ? [SPOT_ANNOTATION] : []),
  ];
}
