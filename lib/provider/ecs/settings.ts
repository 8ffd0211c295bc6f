import * as z from 'zod/mini';
import {
  type Env,
  parseSettings,
  type SettingsResult,
  type Variables,
  wholeNumber,
} from '../../config/env-parsing.ts';
import { addIssue } from '../../util/zod-mini.ts';
import { type OverrideRule, parseOverrideAllowlist } from './override-allowlist.ts';

/**
 * The ECS Fargate provider's own environment variables, validated at cold
 * start with every issue named at once. Light on purpose (zod/mini only): the
 * provider and the ECS, CloudWatch Logs and SSM clients load only when it is
 * chosen.
 */

export type CapacityProvider = 'FARGATE' | 'FARGATE_SPOT';

export interface EcsSettings {
  /** The ECS cluster's name (not its ARN): tasks run there, and the event rule matches it. */
  cluster: string;
  subnets: readonly string[];
  securityGroups: readonly string[];
  assignPublicIp: boolean;
  executionRoleArn: string;
  /** The task role of pods that name none (through the allowlisted annotation); none when absent. */
  taskRoleArn?: string;
  logGroup: string;
  platformVersion: string;
  capacityProvider: CapacityProvider;
  /** The CPU architecture of every task; the images must have it. */
  cpuArchitecture: 'X86_64' | 'ARM64';
  /**
   * Prefix of every task definition family this deployment registers
   * (`<prefix>-<content hash>`), of the tasks' startedBy tokens and of the
   * tags: IAM scopes RunTask to it and the event rule matches it.
   */
  familyPrefix: string;
  /** SSM path (starting and not ending with `/`) under which pods' Secret values are stored. */
  secretsPath: string;
  /** Who may use which per-pod override annotation. */
  overrideAllowlist: readonly OverrideRule[];
  /** Repository credentials (a Secrets Manager secret ARN) by registry host. */
  registryCredentials: Readonly<Record<string, string>>;
  /**
   * The image of the container that writes a pod's configMap, secret,
   * downwardAPI and projected volumes before its containers start (busybox:
   * `sh`, `base64`, `chmod`, `ln`), pulled by every task that has such volumes.
   */
  volumeImage: string;
  /** Tasks not refreshed by an event or a poll for this long are described again (the push's safety net). */
  statusPollMs: number;
  /** Another endpoint for ECS, CloudWatch Logs and SSM (a simulation); AWS's own when absent. */
  endpoint?: string;
}

/** The volume writer's image unless configured: busybox from ECR Public (no Docker Hub rate limit), a fixed release. */
export const DEFAULT_VOLUME_IMAGE = 'public.ecr.aws/docker/library/busybox:1.36.1';

const SUBNET = /^subnet-[0-9a-f]{8,17}$/;
const SECURITY_GROUP = /^sg-[0-9a-f]{8,17}$/;
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]+$/;

function list(pattern: RegExp, what: string) {
  return z.pipe(
    z.pipe(
      z.string(),
      z.transform((raw: string) =>
        raw
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.length > 0),
      ),
    ),
    z
      .array(z.string().check(z.regex(pattern, `each must be ${what}`)))
      .check(z.maxLength(16, 'at most 16 (the limit of awsvpcConfiguration)')),
  );
}

/** A string, trimmed, then checked. */
function trimmed(params: { message: string } | undefined, ...checks: z.core.$ZodCheck<string>[]) {
  return z.string(params).check(z.trim(), ...checks);
}

const variables = {
  SVK_ECS_CLUSTER: trimmed(
    { message: 'is required: the name of the ECS cluster pods run on' },
    z.regex(/^[A-Za-z0-9_-]{1,255}$/, 'must be a cluster name (letters, digits, - and _; not an ARN)'),
  ),
  SVK_ECS_SUBNETS: z.pipe(
    list(SUBNET, 'a subnet id (subnet-...)'),
    z.array(z.string()).check(z.minLength(1, 'is required: at least one subnet id')),
  ),
  SVK_ECS_SECURITY_GROUPS: z.optional(list(SECURITY_GROUP, 'a security group id (sg-...)')),
  SVK_ECS_ASSIGN_PUBLIC_IP: z._default(
    z.enum(['true', 'false'], { message: 'must be true or false' }),
    'false',
  ),
  SVK_ECS_EXECUTION_ROLE_ARN: trimmed(
    { message: 'is required: the task execution role (pulls images, writes logs, reads secrets)' },
    z.regex(ROLE_ARN, 'must be an IAM role ARN'),
  ),
  SVK_ECS_TASK_ROLE_ARN: z.optional(trimmed(undefined, z.regex(ROLE_ARN, 'must be an IAM role ARN'))),
  SVK_ECS_LOG_GROUP: trimmed(
    { message: 'is required: the CloudWatch Logs group of the containers' },
    z.regex(/^[\w/#.-]{1,512}$/, 'must be a log group name'),
  ),
  SVK_ECS_PLATFORM_VERSION: z._default(
    trimmed(undefined, z.regex(/^(LATEST|\d+\.\d+\.\d+)$/, 'must be LATEST or a version such as 1.4.0')),
    'LATEST',
  ),
  SVK_ECS_CAPACITY_PROVIDER: z._default(
    z.enum(['FARGATE', 'FARGATE_SPOT'], { message: 'must be FARGATE or FARGATE_SPOT' }),
    'FARGATE',
  ),
  SVK_ECS_CPU_ARCHITECTURE: z._default(
    z.enum(['X86_64', 'ARM64'], { message: 'must be X86_64 or ARM64' }),
    'X86_64',
  ),
  SVK_ECS_FAMILY_PREFIX: z._default(
    trimmed(undefined, z.regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be 1-200 letters, digits, - or _')),
    'serverless-virtual-kubelet',
  ),
  SVK_ECS_SECRETS_PATH: z._default(
    trimmed(
      undefined,
      z.regex(/^(\/[A-Za-z0-9_.-]+){1,10}$/, 'must be an SSM path such as /svk/prod/pod-secrets'),
    ),
    '/serverless-virtual-kubelet/pod-secrets',
  ),
  SVK_ECS_OVERRIDE_ALLOWLIST: z.pipe(
    z.optional(z.string()),
    z.transform((raw: string | undefined, ctx) => {
      const parsed = parseOverrideAllowlist(raw);
      if (parsed.ok) return parsed.rules;
      for (const message of parsed.issues) addIssue(ctx, message);
      return [];
    }),
  ),
  SVK_ECS_REGISTRY_CREDENTIALS: z.pipe(
    z.optional(z.string()),
    z.transform((raw: string | undefined, ctx) => {
      const parsed = registryCredentials(raw);
      if (parsed.ok) return parsed.byHost;
      for (const message of parsed.issues) addIssue(ctx, message);
      return {};
    }),
  ),
  SVK_ECS_VOLUME_IMAGE: z._default(
    trimmed(
      undefined,
      z.regex(/^[a-z0-9][^\s]{0,510}$/, 'must be an image reference such as busybox:1.36.1'),
    ),
    DEFAULT_VOLUME_IMAGE,
  ),
  SVK_ECS_STATUS_POLL_SECONDS: wholeNumber(60, 5, 3600),
  SVK_ECS_ENDPOINT: z.optional(z.url({ message: 'must be a URL' })),
};

/**
 * Reads the ECS provider's settings, or every issue with them (each
 * variable on its own, so one bad variable never hides another).
 */
export function parseEcsSettings(env: Env): SettingsResult<EcsSettings> {
  return parseSettings(variables, env, build);
}

function build(v: Variables<typeof variables>): EcsSettings {
  return {
    cluster: v.SVK_ECS_CLUSTER,
    subnets: v.SVK_ECS_SUBNETS,
    securityGroups: v.SVK_ECS_SECURITY_GROUPS ?? [],
    assignPublicIp: v.SVK_ECS_ASSIGN_PUBLIC_IP === 'true',
    executionRoleArn: v.SVK_ECS_EXECUTION_ROLE_ARN,
    ...(v.SVK_ECS_TASK_ROLE_ARN ? { taskRoleArn: v.SVK_ECS_TASK_ROLE_ARN } : {}),
    logGroup: v.SVK_ECS_LOG_GROUP,
    platformVersion: v.SVK_ECS_PLATFORM_VERSION,
    capacityProvider: v.SVK_ECS_CAPACITY_PROVIDER,
    cpuArchitecture: v.SVK_ECS_CPU_ARCHITECTURE,
    familyPrefix: v.SVK_ECS_FAMILY_PREFIX,
    secretsPath: v.SVK_ECS_SECRETS_PATH,
    overrideAllowlist: v.SVK_ECS_OVERRIDE_ALLOWLIST,
    registryCredentials: v.SVK_ECS_REGISTRY_CREDENTIALS,
    volumeImage: v.SVK_ECS_VOLUME_IMAGE,
    statusPollMs: v.SVK_ECS_STATUS_POLL_SECONDS * 1000,
    ...(v.SVK_ECS_ENDPOINT ? { endpoint: v.SVK_ECS_ENDPOINT } : {}),
  };
}

/** `registry.example.com=arn:aws:secretsmanager:...,other.io=arn:...` into a map by host. */
function registryCredentials(
  raw: string | undefined,
): { ok: true; byHost: Record<string, string> } | { ok: false; issues: string[] } {
  const byHost: Record<string, string> = {};
  const issues: string[] = [];
  for (const part of (raw ?? '').split(',').map((p) => p.trim())) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const host = eq < 0 ? '' : part.slice(0, eq).trim();
    const arn = eq < 0 ? '' : part.slice(eq + 1).trim();
    if (!/^[a-z0-9.-]+(:\d{1,5})?$/.test(host))
      issues.push(`"${part}": the registry host is missing or invalid`);
    else if (!SECRET_ARN.test(arn))
      issues.push(`"${host}": the credentials must be a Secrets Manager secret ARN`);
    else if (host in byHost) issues.push(`"${host}" is given twice`);
    else byHost[host] = arn;
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, byHost };
}
