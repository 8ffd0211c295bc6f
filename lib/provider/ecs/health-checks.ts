import type { HealthCheck } from '@aws-sdk/client-ecs';
import type { V1Container } from '@kubernetes/client-node';
import { containerProbes, expandProbeCommands, type ProbeSpec, probeProblems } from '../container-probes.ts';

/**
 * Probes on Fargate: an exec readiness or liveness probe becomes the
 * container's ECS health check, where their semantics match (ECS Developer
 * Guide, "Determine Amazon ECS task health using container health checks";
 * the API's HealthCheck):
 *
 * | probe field | health check | match |
 * | --- | --- | --- |
 * | `exec.command` | `command: ["CMD", ...]` | the same: run in the container without a shell, exit 0 healthy |
 * | `periodSeconds` | `interval` (5-300) | the same; outside ECS's range refused |
 * | `timeoutSeconds` | `timeout` (2-60) | 1 s (the default) becomes 2 s: a check that answers within 1 s passes either way; over 60 refused |
 * | `failureThreshold` | `retries` (1-10) | the same: unhealthy after that many failures in a row; over 10 refused |
 * | `successThreshold` | none | 1 only: ECS is healthy after one pass |
 * | `initialDelaySeconds` | `startPeriod` (0-300) | failures do not count before it; a pass within it makes the container healthy at once (the kubelet would not have probed yet) |
 *
 * The provider acts on the health status itself, which a RunTask task does
 * not (ECS restarts an unhealthy task only for a service): a readiness probe
 * makes the container ready while ECS says HEALTHY; a liveness probe stops
 * the task when ECS says UNHEALTHY, and the pod's restartPolicy restarts it
 * as a new task with the kubelet's back-off. ECS reads health only through
 * DescribeTasks (a task state change event carries none), so a pod with a
 * health check is described on every status round.
 *
 * Refused by name: httpGet and tcpSocket probes (a health check runs a
 * command in the container, which may have no HTTP client), startup probes
 * (a health check has no startup stage), a readiness and a liveness probe
 * that differ (a container has one health check), and every lifecycle hook
 * (ECS runs none).
 */

/** What a container's health check stands for. */
export interface ContainerHealth {
  readiness: boolean;
  liveness: boolean;
}

/** A container's health check and what it stands for, or none. */
export interface HealthMapping {
  check?: HealthCheck;
  health?: ContainerHealth;
}

/** Everything about a container's probes and hooks Fargate cannot honour, naming each field under `at`. */
export function healthProblems(at: string, kind: 'initContainers' | 'containers', c: V1Container): string[] {
  const problems = probeProblems(at, kind, c);
  if (problems.length > 0 || kind === 'initContainers') return problems;
  const out: string[] = [];
  const refuse = (field: string, why: string) => out.push(`${at}.${field}: ${why}`);
  if (c.startupProbe) refuse('startupProbe', 'an ECS health check has no startup stage');
  if (c.lifecycle?.postStart) refuse('lifecycle.postStart', 'ECS runs no lifecycle hooks');
  if (c.lifecycle?.preStop) refuse('lifecycle.preStop', 'ECS runs no lifecycle hooks');
  const probes = containerProbes(c);
  for (const kind of ['readiness', 'liveness'] as const) {
    const spec = probes[kind];
    const field = `${kind}Probe`;
    if (!spec) continue;
    if (!('exec' in spec.action)) {
      refuse(field, 'an ECS health check runs a command: only exec probes run on Fargate');
      continue;
    }
    if (spec.periodSeconds < 5 || spec.periodSeconds > 300)
      refuse(
        `${field}.periodSeconds`,
        `an ECS health check's interval is 5-300 s, not ${spec.periodSeconds}`,
      );
    if (spec.timeoutSeconds > 60)
      refuse(
        `${field}.timeoutSeconds`,
        `an ECS health check times out within 60 s, not ${spec.timeoutSeconds}`,
      );
    if (spec.failureThreshold > 10)
      refuse(
        `${field}.failureThreshold`,
        `an ECS health check retries at most 10 times, not ${spec.failureThreshold}`,
      );
    if (spec.initialDelaySeconds > 300)
      refuse(`${field}.initialDelaySeconds`, `an ECS health check's start period is at most 300 s`);
    if (spec.successThreshold !== 1)
      refuse(`${field}.successThreshold`, 'an ECS health check is healthy after one pass: only 1');
  }
  if (probes.readiness && probes.liveness && !sameProbe(probes.readiness, probes.liveness))
    refuse(
      'readinessProbe',
      'a Fargate container has one health check: readiness and liveness must be the same exec probe',
    );
  return out;
}

/** The health check of a container whose {@link healthProblems} are none. */
export function healthMapping(c: V1Container): HealthMapping {
  const probes = expandProbeCommands(containerProbes(c), c);
  const spec = probes.liveness ?? probes.readiness;
  if (!spec || !('exec' in spec.action)) return {};
  return {
    check: {
      command: ['CMD', ...spec.action.exec.command],
      interval: spec.periodSeconds,
      timeout: Math.max(2, spec.timeoutSeconds),
      retries: spec.failureThreshold,
      startPeriod: spec.initialDelaySeconds,
    },
    health: { readiness: probes.readiness !== undefined, liveness: probes.liveness !== undefined },
  };
}

function sameProbe(a: ProbeSpec, b: ProbeSpec): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
