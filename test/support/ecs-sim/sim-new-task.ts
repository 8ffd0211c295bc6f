import { randomUUID } from 'node:crypto';
import type { ContainerBehaviour, SimContainer, SimHealthCheck, SimTask } from './sim-types.ts';
import type { SsmSim } from './ssm-sim.ts';

/**
 * A task as RunTask creates it (PROVISIONING, its containers PENDING), with
 * each container's environment resolved as ECS's agent will (definition,
 * then the RunTask override, then `secrets` read from SSM) and what will keep
 * it from starting: a missing SSM parameter (ResourceInitializationError) or
 * an image that cannot be pulled (CannotPullContainerError; images named
 * `*does-not-exist*` in the simulation).
 */
export interface NewTaskOptions {
  cluster: string;
  clusterArn: string;
  definition: Record<string, unknown>;
  body: Record<string, unknown>;
  now: number;
  /** How many tasks exist already (it picks the task's IP). */
  index: number;
  region: string;
  account: string;
  provisionMs: number;
  visibilityDelayMs: number;
  ssm: SsmSim;
  behaviour: ContainerBehaviour;
}

export function newTask(o: NewTaskOptions): SimTask {
  const { cluster, definition, body, now } = o;
  const id = randomUUID().replaceAll('-', '');
  const vpc = (body.networkConfiguration as { awsvpcConfiguration?: { subnets?: string[] } } | undefined)
    ?.awsvpcConfiguration;
  const overrides = (body.overrides ?? {}) as {
    containerOverrides?: Array<{ name?: string; environment?: Array<{ name: string; value: string }> }>;
  };
  const containers = (definition.containerDefinitions as Array<Record<string, unknown>>).map((c, i) =>
    container(o, c, overrides.containerOverrides?.find((x) => x.name === c.name)?.environment ?? [], i),
  );
  const task: SimTask = {
    arn: `arn:aws:ecs:${o.region}:${o.account}:task/${cluster}/${id}`,
    id,
    clusterArn: o.clusterArn,
    taskDefinitionArn: String(definition.taskDefinitionArn),
    group: typeof body.group === 'string' ? body.group : `family:${definition.family}`,
    ...(typeof body.startedBy === 'string' ? { startedBy: body.startedBy } : {}),
    tags: (body.tags as SimTask['tags'] | undefined) ?? [],
    overrides: body.overrides ?? { containerOverrides: [] },
    cpu: String(definition.cpu),
    memory: String(definition.memory),
    capacityProvider: String(
      (body.capacityProviderStrategy as Array<{ capacityProvider: string }> | undefined)?.[0]
        ?.capacityProvider ?? 'FARGATE',
    ),
    createdAt: now,
    version: 0,
    lastStatus: 'PROVISIONING',
    desiredStatus: 'RUNNING',
    podIp: `10.0.${(o.index >> 8) & 255}.${(o.index & 255) + 1}`,
    eniId: `eni-${id.slice(0, 17)}`,
    subnet: vpc?.subnets?.[0] ?? '',
    containers: containers.map((c) => c.container),
    nextStepAt: now + o.provisionMs,
    visibleAt: now + o.visibilityDelayMs,
  };
  const failure = containers.find((c) => c.failure);
  if (failure?.failure) task.startFailure = { ...failure.failure, container: failure.container.name };
  return task;
}

function container(
  o: NewTaskOptions,
  c: Record<string, unknown>,
  overrideEnv: Array<{ name: string; value: string }>,
  index: number,
): { container: SimContainer; failure?: { stopCode: string; reason: string } } {
  const env: Record<string, string> = {};
  for (const e of (c.environment as Array<{ name: string; value: string }> | undefined) ?? [])
    env[e.name] = e.value;
  for (const e of overrideEnv) env[e.name] = e.value;
  let failure: { stopCode: string; reason: string } | undefined;
  for (const s of (c.secrets as Array<{ name: string; valueFrom: string }> | undefined) ?? []) {
    const value = o.ssm.read(s.valueFrom);
    if (value === undefined)
      failure ??= {
        stopCode: 'TaskFailedToStart',
        reason: `ResourceInitializationError: unable to pull secrets or registry auth: unable to retrieve secrets from ssm: service call has been retried 1 time(s): invalid ssm parameters: ${s.valueFrom}`,
      };
    else env[s.name] = value;
  }
  const image = String(c.image);
  if (image.includes('does-not-exist'))
    failure ??= {
      stopCode: 'TaskFailedToStart',
      reason: `CannotPullContainerError: pull image manifest has been retried 5 time(s): failed to resolve ref ${image}: not found`,
    };
  const argv = [
    ...((c.entryPoint as string[] | undefined) ?? []),
    ...((c.command as string[] | undefined) ?? []),
  ];
  const log = c.logConfiguration as { options?: Record<string, string> } | undefined;
  return {
    container: {
      name: String(c.name),
      image,
      essential: c.essential !== false,
      after: ((c.dependsOn as Array<{ containerName: string }> | undefined) ?? []).map(
        (d) => d.containerName,
      ),
      stopTimeoutSeconds: typeof c.stopTimeout === 'number' ? c.stopTimeout : 30,
      run: o.behaviour(argv, env),
      ...healthCheckOf(c.healthCheck),
      env,
      lastStatus: 'PENDING',
      runtimeId: `${index}${randomUUID().slice(0, 8)}`,
      ...(log?.options
        ? {
            logStream: `${log.options['awslogs-group']}\n${log.options['awslogs-stream-prefix']}/${String(c.name)}`,
          }
        : {}),
    },
    ...(failure ? { failure } : {}),
  };
}

/** A definition's health check with ECS's defaults (HealthCheck: interval 30, timeout 5, retries 3, startPeriod 0). */
function healthCheckOf(value: unknown): { healthCheck?: SimHealthCheck } {
  if (typeof value !== 'object' || value === null) return {};
  const h = value as Record<string, unknown>;
  const num = (v: unknown, fallback: number) => (typeof v === 'number' ? v : fallback);
  return {
    healthCheck: {
      command: Array.isArray(h.command) ? h.command.map(String) : [],
      interval: num(h.interval, 30),
      timeout: num(h.timeout, 5),
      retries: num(h.retries, 3),
      startPeriod: num(h.startPeriod, 0),
    },
  };
}
