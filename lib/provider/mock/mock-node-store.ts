import type { StateTable } from '../../state/dynamodb.ts';
import type { ProviderNodeCondition } from '../provider.ts';
import type { MockNodeOverride, MockNodeStateStore } from './mock-node.ts';

/** All node overrides share one partition, so one query serves every node of a deployment. */
const PARTITION = 'mock#nodes';

function isCondition(value: unknown): value is ProviderNodeCondition {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.type === 'string' &&
    (c.status === 'True' || c.status === 'False' || c.status === 'Unknown') &&
    typeof c.reason === 'string' &&
    typeof c.message === 'string'
  );
}

/** The mock's node overrides in the state table (pk `mock#nodes`, sk = node name). */
export class DynamoDbMockNodeStore implements MockNodeStateStore {
  constructor(private readonly table: StateTable) {}

  async loadOverrides(): Promise<Map<string, MockNodeOverride>> {
    const items = await this.table.query(PARTITION);
    return new Map(
      items.map((item) => [
        item.sk,
        {
          ...(typeof item.pingError === 'string' ? { pingError: item.pingError } : {}),
          ...(Array.isArray(item.conditions) ? { conditions: item.conditions.filter(isCondition) } : {}),
          ...(Array.isArray(item.dropConditions)
            ? { dropConditions: item.dropConditions.filter((t): t is string => typeof t === 'string') }
            : {}),
        },
      ]),
    );
  }

  /** Sets (or with `undefined`, clears) the override of one node: for tests and demos. */
  async setOverride(nodeName: string, override: MockNodeOverride | undefined): Promise<void> {
    const key = { pk: PARTITION, sk: nodeName };
    if (override === undefined) await this.table.delete(key);
    else await this.table.put({ ...key, ...override });
  }
}
