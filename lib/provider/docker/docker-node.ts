import type Docker from 'dockerode';
import type { NodeProvider, ProviderNodeOptions, ProviderNodeStatus } from '../provider.ts';
import { engineErrorMessage } from './engine-errors.ts';
import { engineName } from './engine-name.ts';

export interface DockerNodeProviderOptions {
  docker: Docker;
  capacity: Readonly<Record<string, string>>;
  operatingSystem: string;
  kubeletVersion: string;
}

/**
 * The node part of the Docker provider: a node is Ready while its engine
 * answers. Capacity is what the node settings say (the engine's own CPUs and
 * memory are the host's, shared with whatever else runs there); node info
 * names the engine and its version.
 */
export class DockerNodeProvider implements NodeProvider {
  readonly name = 'docker';
  private capacity: Readonly<Record<string, string>>;

  constructor(private readonly options: DockerNodeProviderOptions) {
    this.capacity = options.capacity;
  }

  configure(options: ProviderNodeOptions): void {
    this.capacity = options.capacity;
  }

  async ping(_nodeName: string, signal?: AbortSignal): Promise<void> {
    try {
      await untilAborted(this.options.docker.ping(), signal);
    } catch (err) {
      throw new Error(`docker engine does not answer: ${engineErrorMessage(err)}`, { cause: err });
    }
  }

  async nodeStatus(_nodeName: string, signal?: AbortSignal): Promise<ProviderNodeStatus> {
    const version = await untilAborted(this.options.docker.version(), signal);
    const engine = engineName(version);
    return {
      capacity: this.capacity,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: `${engine} ${version.Version} (API ${version.ApiVersion}) is ready`,
        },
        {
          type: 'MemoryPressure',
          status: 'False',
          reason: 'KubeletHasSufficientMemory',
          message: 'not measured',
        },
        {
          type: 'DiskPressure',
          status: 'False',
          reason: 'KubeletHasNoDiskPressure',
          message: 'not measured',
        },
        { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'not measured' },
      ],
      nodeInfo: {
        kubeletVersion: this.options.kubeletVersion,
        operatingSystem: this.options.operatingSystem,
        architecture: version.Arch === 'x86_64' ? 'amd64' : version.Arch,
        osImage: `${engine} ${version.Version} on ${version.Os}/${version.KernelVersion}`,
      },
    };
  }
}

/**
 * The call's result, or the signal's reason once it aborts: dockerode's
 * typings take no signal for ping and version, so a hung engine is left
 * behind instead of holding up the heartbeat.
 */
function untilAborted<T>(call: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return call;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    call.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
