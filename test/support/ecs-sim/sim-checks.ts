import { isFargateSize } from '../../../lib/provider/ecs/fargate-size.ts';

/**
 * Limits the ECS API documents that the published model does not carry,
 * checked by the simulation on every request of these operations; each
 * names the page it comes from. A request breaking one is answered as ECS
 * answers it (ClientException or InvalidParameterException) and recorded as
 * a violation, which the tests require to be none.
 */

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** RunTask (API reference, RunTask request parameters). */
export function runTaskProblems(body: Json): string[] {
  const p: string[] = [];
  const token = str(body.clientToken);
  // "Up to 64 ASCII characters are allowed."
  if (token !== undefined && (token.length > 64 || !/^[\x20-\x7e]+$/.test(token)))
    p.push('clientToken: up to 64 ASCII characters');
  const startedBy = str(body.startedBy);
  // "Up to 36 letters (uppercase and lowercase), numbers, hyphens (-), forward slash (/), and underscores (_) are allowed."
  if (startedBy !== undefined && !/^[A-Za-z0-9\-/_]{1,36}$/.test(startedBy))
    p.push('startedBy: up to 36 letters, numbers, -, / and _');
  // "A total of 8192 characters are allowed for overrides. This limit includes the JSON formatting characters of the override structure."
  if (body.overrides !== undefined && JSON.stringify(body.overrides).length > 8192)
    p.push('overrides: more than 8192 characters');
  const count = body.count ?? 1;
  if (typeof count !== 'number' || count < 1 || count > 10) p.push('count: 1 to 10 tasks per call');
  // "When you use cluster auto scaling, you must specify capacityProviderStrategy and not launchType."
  if (body.launchType !== undefined && body.capacityProviderStrategy !== undefined)
    p.push('launchType and capacityProviderStrategy cannot both be given');
  for (const item of list(body.capacityProviderStrategy)) {
    const name = isObj(item) ? str(item.capacityProvider) : undefined;
    if (name !== 'FARGATE' && name !== 'FARGATE_SPOT')
      p.push(`capacityProviderStrategy: ${name} is not a Fargate capacity provider`);
  }
  // Tagging your resources: at most 50 tags, keys up to 128 and values up to 256 characters.
  const tags = list(body.tags);
  if (tags.length > 50) p.push('tags: at most 50');
  for (const t of tags) {
    if (!isObj(t)) continue;
    const key = str(t.key) ?? '';
    const value = str(t.value) ?? '';
    if (key.length < 1 || key.length > 128) p.push(`tags: key ${key} must have 1 to 128 characters`);
    if (value.length > 256) p.push(`tags: value of ${key} over 256 characters`);
    if (!/^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u.test(key + value))
      p.push(`tags: ${key} has characters tags do not allow`);
    if (key.toLowerCase().startsWith('aws:')) p.push(`tags: ${key} uses the reserved aws: prefix`);
  }
  const vpc = isObj(body.networkConfiguration) ? body.networkConfiguration.awsvpcConfiguration : undefined;
  // awsvpc tasks need a network configuration: up to 16 subnets and 5 security groups.
  if (!isObj(vpc)) p.push('networkConfiguration.awsvpcConfiguration: required for awsvpc (Fargate) tasks');
  else {
    if (list(vpc.subnets).length === 0 || list(vpc.subnets).length > 16)
      p.push('awsvpcConfiguration.subnets: 1 to 16');
    if (list(vpc.securityGroups).length > 5) p.push('awsvpcConfiguration.securityGroups: at most 5');
  }
  return p;
}

/** RegisterTaskDefinition for Fargate (task definition parameters for Fargate; ContainerDefinition). */
export function taskDefinitionProblems(body: Json): string[] {
  const p: string[] = [];
  const family = str(body.family) ?? '';
  // "Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed."
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(family)) p.push('family: up to 255 letters, numbers, _ and -');
  if (!list(body.requiresCompatibilities).includes('FARGATE'))
    p.push('requiresCompatibilities: FARGATE expected');
  // Fargate tasks must use the awsvpc network mode.
  if (body.networkMode !== 'awsvpc') p.push('networkMode: Fargate requires awsvpc');
  const cpu = Number(body.cpu);
  const memory = Number(body.memory);
  // Task CPU and memory: one of the documented Fargate combinations ("Invalid 'cpu' setting for task" otherwise).
  if (!isFargateSize(cpu, memory))
    p.push(`cpu/memory: ${body.cpu}/${body.memory} is not a Fargate task size`);
  const containers = list(body.containerDefinitions).filter(isObj);
  if (containers.length === 0 || containers.length > 10) p.push('containerDefinitions: 1 to 10 containers');
  const names = containers.map((c) => str(c.name) ?? '');
  if (new Set(names).size !== names.length) p.push('containerDefinitions: names must be unique');
  if (!containers.some((c) => c.essential !== false))
    p.push('containerDefinitions: at least one essential container');
  const needsExecutionRole = containers.some(
    (c) =>
      list(c.secrets).length > 0 || (isObj(c.logConfiguration) && c.logConfiguration.logDriver === 'awslogs'),
  );
  if (needsExecutionRole && !str(body.executionRoleArn))
    p.push('executionRoleArn: required for secrets and awslogs');
  let reserved = 0;
  for (const c of containers) {
    p.push(...containerProblems(c, names, memory));
    reserved +=
      typeof c.memoryReservation === 'number'
        ? c.memoryReservation
        : typeof c.memory === 'number'
          ? c.memory
          : 0;
  }
  // "The total amount of memory reserved for all containers within a task must be lower than the task memory value."
  if (reserved > memory) p.push(`containers reserve ${reserved} MiB, more than the task's ${memory}`);
  for (const v of list(body.volumes))
    if (isObj(v) && (v.host !== undefined || v.dockerVolumeConfiguration !== undefined))
      p.push(`volumes: ${v.name} is not a Fargate volume`);
  return p;
}

function containerProblems(c: Json, names: string[], taskMemory: number): string[] {
  const p: string[] = [];
  const name = str(c.name) ?? '';
  // "Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed."
  if (!/^[A-Za-z0-9_-]{1,255}$/.test(name))
    p.push(`container ${name}: name up to 255 letters, numbers, _ and -`);
  if (!str(c.image)) p.push(`container ${name}: image is required`);
  // Fargate: stopTimeout "the max stop timeout value is 120 seconds".
  if (typeof c.stopTimeout === 'number' && (c.stopTimeout < 0 || c.stopTimeout > 120))
    p.push(`container ${name}: stopTimeout over Fargate's 120 s`);
  if (typeof c.memory === 'number' && c.memory > taskMemory)
    p.push(`container ${name}: memory over the task's`);
  if (
    typeof c.memory === 'number' &&
    typeof c.memoryReservation === 'number' &&
    c.memoryReservation > c.memory
  )
    p.push(`container ${name}: memoryReservation above memory`);
  // awsvpc: "hostPort can be left blank or it must be the same value as the containerPort".
  for (const m of list(c.portMappings).filter(isObj))
    if (m.hostPort !== undefined && m.hostPort !== m.containerPort)
      p.push(`container ${name}: hostPort must equal containerPort`);
  for (const d of list(c.dependsOn).filter(isObj)) {
    if (!names.includes(str(d.containerName) ?? ''))
      p.push(`container ${name}: dependsOn an unknown container`);
  }
  const log = isObj(c.logConfiguration) ? c.logConfiguration : undefined;
  // awslogs on Fargate: awslogs-group, awslogs-region and awslogs-stream-prefix are required.
  if (log?.logDriver === 'awslogs') {
    const options = isObj(log.options) ? log.options : {};
    for (const key of ['awslogs-group', 'awslogs-region', 'awslogs-stream-prefix'])
      if (!str(options[key])) p.push(`container ${name}: awslogs needs ${key} on Fargate`);
  }
  for (const s of list(c.secrets).filter(isObj))
    if (!str(s.name) || !str(s.valueFrom)) p.push(`container ${name}: secrets need name and valueFrom`);
  if (c.privileged === true) p.push(`container ${name}: privileged is not supported on Fargate`);
  return p;
}

/** The essential-container rule of dependencies: a SUCCESS or COMPLETE dependency cannot be essential. */
export function dependencyProblems(body: Json): string[] {
  const containers = list(body.containerDefinitions).filter(isObj);
  const essential = new Set(containers.filter((c) => c.essential !== false).map((c) => str(c.name)));
  const p: string[] = [];
  for (const c of containers)
    for (const d of list(c.dependsOn).filter(isObj))
      if ((d.condition === 'SUCCESS' || d.condition === 'COMPLETE') && essential.has(str(d.containerName)))
        p.push('A dependency container with SUCCESS or COMPLETE condition cannot be an essential container');
  return p;
}
