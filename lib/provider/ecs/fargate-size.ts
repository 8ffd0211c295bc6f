import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from '../../kube/quantity.ts';

/**
 * Task sizes Fargate accepts (Linux), from the ECS Developer Guide's "Task
 * CPU and memory" table: CPU units (1024 per vCPU) and, for each, the memory
 * sizes in MiB. 8 and 16 vCPU need Linux platform version 1.4.0 or later,
 * which LATEST is.
 */
const FARGATE_SIZES: ReadonlyArray<{ cpu: number; memory: readonly number[] }> = [
  { cpu: 256, memory: [512, 1024, 2048] },
  { cpu: 512, memory: range(1024, 4096, 1024) },
  { cpu: 1024, memory: range(2048, 8192, 1024) },
  { cpu: 2048, memory: range(4096, 16384, 1024) },
  { cpu: 4096, memory: range(8192, 30720, 1024) },
  { cpu: 8192, memory: range(16384, 61440, 4096) },
  { cpu: 16384, memory: range(32768, 122880, 8192) },
];

export const FARGATE_MAX_CPU_UNITS = 16384;
export const FARGATE_MAX_MEMORY_MIB = 122880;

function range(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let v = from; v <= to; v += step) out.push(v);
  return out;
}

/** A Fargate task size: CPU units and memory in MiB, as the task definition's strings take them. */
export interface FargateSize {
  cpu: number;
  memory: number;
}

/**
 * The smallest Fargate size with at least `cpuUnits` and `memoryMiB`
 * (cheapest first: the price is linear in both, so the fewest CPU units
 * that can hold the memory, then the least memory), or undefined when the
 * largest size cannot hold them.
 */
export function fargateSize(cpuUnits: number, memoryMiB: number): FargateSize | undefined {
  for (const size of FARGATE_SIZES) {
    if (size.cpu < cpuUnits) continue;
    const memory = size.memory.find((m) => m >= memoryMiB);
    if (memory !== undefined) return { cpu: size.cpu, memory };
  }
  return undefined;
}

/** Whether `cpu`/`memory` is one of Fargate's sizes (the simulation validates task definitions with it). */
export function isFargateSize(cpu: number, memory: number): boolean {
  return FARGATE_SIZES.some((s) => s.cpu === cpu && s.memory.includes(memory));
}

/** What a pod needs, as the kubelet sizes a pod: app containers together, or the largest init container. */
export interface PodResources {
  cpuUnits: number;
  memoryMiB: number;
}

/**
 * The pod's resources in ECS units: for each container the larger of its
 * request and limit (a limit is what it may use, so the task must hold it),
 * summed over the app containers; an init container runs alone before them,
 * so the pod needs the larger of that sum and the largest init container
 * (the kubelet's effective pod request). CPU units round up (1024 = 1 vCPU),
 * memory rounds up to whole MiB.
 */
export function podResources(pod: V1Pod): PodResources {
  const apps = (pod.spec?.containers ?? []).map(containerNeed);
  const inits = (pod.spec?.initContainers ?? []).map(containerNeed);
  const sum = (list: PodResources[], key: keyof PodResources) => list.reduce((a, c) => a + c[key], 0);
  const max = (list: PodResources[], key: keyof PodResources) => Math.max(0, ...list.map((c) => c[key]));
  return {
    cpuUnits: Math.max(sum(apps, 'cpuUnits'), max(inits, 'cpuUnits')),
    memoryMiB: Math.max(sum(apps, 'memoryMiB'), max(inits, 'memoryMiB')),
  };
}

/** One container's need: the larger of request and limit, per resource. */
export function containerNeed(container: V1Container): PodResources {
  const { requests = {}, limits = {} } = container.resources ?? {};
  return {
    cpuUnits: Math.max(cpuUnits(requests.cpu), cpuUnits(limits.cpu)),
    memoryMiB: Math.max(memoryMiB(requests.memory), memoryMiB(limits.memory)),
  };
}

/** A CPU quantity (`500m`, `2`) in ECS CPU units, rounded up; 0 when absent. */
export function cpuUnits(quantity: string | undefined): number {
  const q = quantity === undefined ? undefined : parseQuantity(quantity);
  if (!q) return 0;
  return Number((q.num * 1024n + q.den - 1n) / q.den);
}

/** A memory quantity (`512Mi`, `1G`) in MiB, rounded up; 0 when absent. */
export function memoryMiB(quantity: string | undefined): number {
  const q = quantity === undefined ? undefined : parseQuantity(quantity);
  if (!q) return 0;
  const den = q.den * 1024n * 1024n;
  return Number((q.num + den - 1n) / den);
}
