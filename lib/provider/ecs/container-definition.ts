import type { ContainerDefinition } from '@aws-sdk/client-ecs';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerArgv, expandCommandAndArgs } from '../container-command.ts';
import { isFileVolume } from '../file-volumes.ts';
import { isAdmissionTokenProjection } from '../service-account-volume.ts';
import { cpuUnits, memoryMiB } from './fargate-size.ts';
import { healthMapping } from './health-checks.ts';

/** Fargate's longest stopTimeout: a container is killed at most this long after StopTask. */
export const FARGATE_MAX_STOP_TIMEOUT_SECONDS = 120;

/** What a container definition needs besides the container itself. */
export interface ContainerContext {
  pod: V1Pod;
  role: 'init' | 'app';
  /** Containers this one waits for (with condition SUCCESS): the init container before it, or the last one. */
  after?: string;
  environment: Array<{ name: string; value: string }>;
  /** Variable name → SSM parameter name. */
  secrets: Array<{ name: string; valueFrom: string }>;
  logGroup: string;
  region: string;
  /** Repository credentials by registry host. */
  registryCredentials: Readonly<Record<string, string>>;
}

/**
 * One container as ECS runs it: the pod's `command` is the image's
 * ENTRYPOINT (ECS's `entryPoint`) and `args` its CMD (ECS's `command`), as
 * Kubernetes documents, both with `$(VAR)` expanded as the kubelet does
 * (container-command.ts; a word that would carry a Secret's value is
 * refused, {@link commandSecretProblems}); an init container is not essential and each waits
 * for the one before it to exit 0 (dependsOn SUCCESS), app containers wait
 * for the last one, and all app containers are essential (ECS stops the
 * task when one of them exits). CPU and memory requests become the
 * container's cpu and memoryReservation, a memory limit its hard `memory`;
 * init containers get none, as they run alone within the task's size.
 */
export function containerDefinition(c: V1Container, ctx: ContainerContext): ContainerDefinition {
  const { pod, role } = ctx;
  const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
  const credentials = ctx.registryCredentials[registryHost(c.image ?? '')];
  const mounts = (c.volumeMounts ?? []).filter((m) => isTaskVolume(pod, m.name));
  const health = role === 'app' ? healthMapping(c).check : undefined;
  const { command, args } = containerArgv(c);
  return {
    name: c.name,
    image: c.image,
    essential: role === 'app',
    ...(command ? { entryPoint: command } : {}),
    ...(args ? { command: args } : {}),
    ...(c.workingDir ? { workingDirectory: c.workingDir } : {}),
    ...(ctx.environment.length > 0 ? { environment: ctx.environment } : {}),
    ...(ctx.secrets.length > 0 ? { secrets: ctx.secrets } : {}),
    ...(c.ports?.length
      ? {
          portMappings: c.ports.map((p) => ({
            containerPort: p.containerPort,
            hostPort: p.containerPort,
            protocol: p.protocol === 'UDP' ? ('udp' as const) : ('tcp' as const),
          })),
        }
      : {}),
    ...(mounts.length > 0
      ? {
          mountPoints: mounts.map((m) => ({
            sourceVolume: m.name,
            containerPath: m.mountPath,
            // As the kubelet mounts them: a configMap, secret, downwardAPI or projected volume read-only.
            readOnly: m.readOnly === true || isFileTaskVolume(pod, m.name),
          })),
        }
      : {}),
    ...(ctx.after ? { dependsOn: [{ containerName: ctx.after, condition: 'SUCCESS' as const }] } : {}),
    ...(role === 'app' ? resources(c) : {}),
    ...security(c, pod),
    ...(c.stdin ? { interactive: true } : {}),
    ...(c.tty ? { pseudoTerminal: true } : {}),
    stopTimeout: Math.min(Math.max(grace, 0), FARGATE_MAX_STOP_TIMEOUT_SECONDS),
    ...(health ? { healthCheck: health } : {}),
    ...(credentials ? { repositoryCredentials: { credentialsParameter: credentials } } : {}),
    logConfiguration: {
      logDriver: 'awslogs',
      options: {
        'awslogs-group': ctx.logGroup,
        'awslogs-region': ctx.region,
        'awslogs-stream-prefix': logStreamPrefix(pod.metadata?.namespace ?? 'default'),
      },
    },
  };
}

/**
 * Why the container's `command` and `args` cannot go into a task
 * definition: a word whose `$(VAR)` expansion takes a Secret's value
 * (directly, through envFrom, or through another variable that expanded it)
 * would write that value into the definition, which is readable by anyone
 * who may describe it. The variable itself reaches the container as an SSM
 * secret (env-partition.ts), so a shell can read it at run time instead
 * (`sh -c 'tool --password "$PASSWORD"'`). A word with the pod's own fields
 * (fieldRef) goes into the definition, which is then this pod's own.
 */
export function commandSecretProblems(path: string, c: V1Container): string[] {
  const { command, args } = expandCommandAndArgs(c);
  const problems: string[] = [];
  for (const [field, words] of [
    ['command', command],
    ['args', args],
  ] as const) {
    (words ?? []).forEach((word, i) => {
      const secret = word.uses.find((v) => v.valueFrom?.secretKeyRef);
      if (secret) {
        problems.push(
          `${path}.${field}[${i}]: $(${secret.name}) expands a Secret's value, which would be written into the task definition (read "$${secret.name}" from the environment in a shell instead)`,
        );
      }
    });
  }
  return problems;
}

/**
 * The awslogs stream prefix of a pod's containers: its namespace. awslogs
 * names each stream `<prefix>/<container>/<task id>`, which is how the logs
 * endpoint finds a container's stream from the task it ran in.
 */
export function logStreamPrefix(namespace: string): string {
  return namespace;
}

/** The log stream of one container of one task (awslogs' naming). */
export function logStreamName(namespace: string, container: string, taskArn: string): string {
  return `${logStreamPrefix(namespace)}/${container}/${taskArn.split('/').pop() ?? taskArn}`;
}

function resources(c: V1Container): Pick<ContainerDefinition, 'cpu' | 'memory' | 'memoryReservation'> {
  const { requests = {}, limits = {} } = c.resources ?? {};
  const cpu = cpuUnits(requests.cpu);
  const reservation = memoryMiB(requests.memory);
  const limit = memoryMiB(limits.memory);
  return {
    ...(cpu > 0 ? { cpu } : {}),
    ...(reservation > 0 ? { memoryReservation: reservation } : {}),
    ...(limit > 0 ? { memory: limit } : {}),
  };
}

function security(
  c: V1Container,
  pod: V1Pod,
): Pick<ContainerDefinition, 'user' | 'readonlyRootFilesystem' | 'linuxParameters'> {
  const sc = c.securityContext;
  const podSc = pod.spec?.securityContext;
  const user = sc?.runAsUser ?? podSc?.runAsUser;
  const group = sc?.runAsGroup ?? podSc?.runAsGroup;
  const add = sc?.capabilities?.add ?? [];
  const drop = sc?.capabilities?.drop ?? [];
  return {
    ...(user !== undefined ? { user: group !== undefined ? `${user}:${group}` : String(user) } : {}),
    ...(sc?.readOnlyRootFilesystem ? { readonlyRootFilesystem: true } : {}),
    ...(add.length > 0 || drop.length > 0
      ? {
          linuxParameters: {
            capabilities: {
              ...(add.length > 0 ? { add: [...add] } : {}),
              ...(drop.length > 0 ? { drop: [...drop] } : {}),
            },
          },
        }
      : {}),
  };
}

/**
 * Volumes that become task volumes: emptyDirs, and the configMap, secret,
 * downwardAPI and projected volumes the volume writer fills
 * (volume-writer.ts); the service-account token projection of a 1.21+ API
 * server is not mounted.
 */
export function isTaskVolume(pod: V1Pod, name: string): boolean {
  return (pod.spec?.volumes ?? []).some(
    (v) => v.name === name && (v.emptyDir !== undefined || isFileTaskVolume(pod, name)),
  );
}

/** A task volume the volume writer fills. */
export function isFileTaskVolume(pod: V1Pod, name: string): boolean {
  return (pod.spec?.volumes ?? []).some(
    (v) => v.name === name && isFileVolume(v) && !isAdmissionTokenProjection(v, pod),
  );
}

/** The registry host of an image reference (`docker.io` for short names, as Docker resolves them). */
export function registryHost(image: string): string {
  const first = image.split('/')[0] ?? '';
  const hasHost =
    image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasHost ? first : 'docker.io';
}
