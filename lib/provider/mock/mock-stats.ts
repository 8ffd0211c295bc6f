import { createHash } from 'node:crypto';
import type { ContainerUsage, PodUsage } from '../provider.ts';
import { type MockPodState, mockPodStage } from './mock-pod-status.ts';

/**
 * Plausible usage figures for mock containers: steady per container (derived
 * from the pod's uid and the container's name, so two scrapes agree), with
 * CPU time growing with the time the container has run, as a real
 * container's counter does. Only running containers have figures.
 */

const MIB = 1024 * 1024;

/** The usage of `state` at `now`, or undefined when its containers are not running. */
export function mockPodUsage(state: MockPodState, now: number): PodUsage | undefined {
  const stage = mockPodStage(state, now);
  if (stage.stage !== 'running') return undefined;
  const startTime = new Date(stage.startedAt);
  return {
    namespace: state.namespace,
    name: state.name,
    uid: state.uid,
    startTime,
    containers: state.containers.map((c) => containerUsage(state.uid, c.name, startTime, now)),
  };
}

function containerUsage(uid: string, name: string, startTime: Date, now: number): ContainerUsage {
  const [a = 0, b = 0] = createHash('sha256').update(`usage:${uid}/${name}`).digest();
  // 5m to 100m of a core, 16 to 127 MiB of working set.
  const usageNanoCores = (5 + (a % 96)) * 1_000_000;
  const workingSetBytes = (16 + (b % 112)) * MIB;
  const runSeconds = Math.max(0, (now - startTime.getTime()) / 1000);
  return {
    name,
    startTime,
    time: new Date(now),
    cpu: { usageNanoCores, usageCoreNanoSeconds: Math.round(usageNanoCores * runSeconds) },
    memory: {
      usageBytes: workingSetBytes + 4 * MIB,
      workingSetBytes,
      rssBytes: Math.round(workingSetBytes * 0.8),
    },
  };
}
