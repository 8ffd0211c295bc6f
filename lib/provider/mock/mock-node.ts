import type { Clock } from '../../clock.ts';
import type {
  NodeProvider,
  ProviderNodeCondition,
  ProviderNodeOptions,
  ProviderNodeStatus,
} from '../provider.ts';

/**
 * Per-node knobs of the mock backend, stored with its state so that tests and
 * demos can change them while functions run: a failing ping, conditions added
 * or dropped.
 */
export interface MockNodeOverride {
  /** When set, ping fails with this message. */
  pingError?: string;
  /** Conditions reported in addition to (or instead of, by type) the healthy defaults. */
  conditions?: ProviderNodeCondition[];
  /** Condition types the mock stops reporting. */
  dropConditions?: string[];
}

/** Where the mock keeps its node overrides. One read serves every node. */
export interface MockNodeStateStore {
  loadOverrides(): Promise<Map<string, MockNodeOverride>>;
}

export const HEALTHY_CONDITIONS: readonly ProviderNodeCondition[] = [
  { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'mock provider is ready' },
  {
    type: 'MemoryPressure',
    status: 'False',
    reason: 'KubeletHasSufficientMemory',
    message: 'no memory pressure',
  },
  { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'no disk pressure' },
  { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'no PID pressure' },
  { type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated', message: 'mock network is up' },
];

export interface MockNodeProviderOptions {
  store: MockNodeStateStore;
  capacity: Readonly<Record<string, string>>;
  operatingSystem: string;
  kubeletVersion: string;
  clock: Clock;
  /** Overrides are re-read at most this often, shared by all nodes. */
  overridesMaxAgeMs?: number;
}

/** The node part of the mock provider: healthy unless its stored overrides say otherwise. */
export class MockNodeProvider implements NodeProvider {
  readonly name = 'mock';
  private cached: { at: number; value: Promise<Map<string, MockNodeOverride>> } | undefined;
  /**
   * The overrides of the last read that succeeded. The store is the state
   * table: when it cannot be read (a DynamoDB outage) the knobs stay as they
   * were, so the mock's nodes do not turn Ready=False for an outage of ours.
   */
  private lastRead = new Map<string, MockNodeOverride>();
  private capacity: Readonly<Record<string, string>>;

  constructor(private readonly options: MockNodeProviderOptions) {
    this.capacity = options.capacity;
  }

  configure(options: ProviderNodeOptions): void {
    this.capacity = options.capacity;
  }

  async ping(nodeName: string): Promise<void> {
    const override = (await this.overrides()).get(nodeName);
    if (override?.pingError) throw new Error(override.pingError);
  }

  async nodeStatus(nodeName: string): Promise<ProviderNodeStatus> {
    const override = (await this.overrides()).get(nodeName);
    const extra = override?.conditions ?? [];
    const dropped = new Set(override?.dropConditions ?? []);
    const conditions = [
      ...HEALTHY_CONDITIONS.filter((c) => !extra.some((e) => e.type === c.type)),
      ...extra,
    ].filter((c) => !dropped.has(c.type));
    return {
      capacity: this.capacity,
      conditions,
      nodeInfo: {
        kubeletVersion: this.options.kubeletVersion,
        operatingSystem: this.options.operatingSystem,
        architecture: 'amd64',
        osImage: 'serverless-virtual-kubelet mock provider',
      },
    };
  }

  private overrides(): Promise<Map<string, MockNodeOverride>> {
    const now = this.options.clock.monotonic();
    const maxAge = this.options.overridesMaxAgeMs ?? 1_000;
    if (!this.cached || now - this.cached.at >= maxAge) {
      const value: Promise<Map<string, MockNodeOverride>> = this.options.store.loadOverrides().then(
        (read) => {
          this.lastRead = read;
          return read;
        },
        () => {
          // A failed read is not cached: the next ping tries again.
          if (this.cached?.value === value) this.cached = undefined;
          return this.lastRead;
        },
      );
      this.cached = { at: now, value };
    }
    return this.cached.value;
  }
}
