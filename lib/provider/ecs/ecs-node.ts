import type { Clock } from '../../clock.ts';
import type { NodeProvider, ProviderNodeOptions, ProviderNodeStatus } from '../provider.ts';
import type { EcsTasks } from './ecs-tasks.ts';

export interface EcsNodeProviderOptions {
  tasks: EcsTasks;
  cluster: string;
  capacity: Readonly<Record<string, string>>;
  kubeletVersion: string;
  cpuArchitecture: 'X86_64' | 'ARM64';
  clock: Clock;
  /** One DescribeClusters answers every node's ping for this long. Default 10 s. */
  cacheMs?: number;
}

/**
 * The node part of the ECS Fargate provider. A node can run pods while its
 * cluster is ACTIVE (DescribeClusters); its capacity is the configured one:
 * Fargate has no node to measure, and its real limit is the account's
 * Fargate vCPU quota in the region, which RunTask reports by starting no
 * task when it is reached.
 */
export class EcsNodeProvider implements NodeProvider {
  readonly name = 'ecs-fargate';
  #capacity: Readonly<Record<string, string>>;
  #cached: { at: number; status: Promise<string | undefined> } | undefined;

  constructor(private readonly options: EcsNodeProviderOptions) {
    this.#capacity = options.capacity;
  }

  configure(options: ProviderNodeOptions): void {
    this.#capacity = options.capacity;
  }

  async ping(_nodeName: string, signal?: AbortSignal): Promise<void> {
    const status = await this.clusterStatus(signal);
    if (status !== 'ACTIVE')
      throw new Error(`ECS cluster ${this.options.cluster} is ${status ?? 'not found'}, not ACTIVE`);
  }

  async nodeStatus(): Promise<ProviderNodeStatus> {
    return {
      capacity: this.#capacity,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: `ECS cluster ${this.options.cluster} is ACTIVE`,
        },
        {
          type: 'MemoryPressure',
          status: 'False',
          reason: 'KubeletHasSufficientMemory',
          message: 'Fargate sizes each task',
        },
        {
          type: 'DiskPressure',
          status: 'False',
          reason: 'KubeletHasNoDiskPressure',
          message: 'Fargate sizes each task',
        },
        {
          type: 'PIDPressure',
          status: 'False',
          reason: 'KubeletHasSufficientPID',
          message: 'Fargate sizes each task',
        },
        {
          type: 'NetworkUnavailable',
          status: 'False',
          reason: 'RouteCreated',
          message: 'each task has its own ENI',
        },
      ],
      nodeInfo: {
        kubeletVersion: this.options.kubeletVersion,
        operatingSystem: 'linux',
        architecture: this.options.cpuArchitecture === 'ARM64' ? 'arm64' : 'amd64',
        osImage: 'AWS Fargate (serverless-virtual-kubelet ecs-fargate provider)',
      },
    };
  }

  private clusterStatus(signal?: AbortSignal): Promise<string | undefined> {
    const now = this.options.clock.monotonic();
    if (!this.#cached || now - this.#cached.at >= (this.options.cacheMs ?? 10_000)) {
      const status = this.options.tasks.clusterStatus(signal);
      // A failed call is not cached: the next ping asks again.
      status.catch(() => {
        if (this.#cached?.status === status) this.#cached = undefined;
      });
      this.#cached = { at: now, status };
    }
    return this.#cached.status;
  }
}
