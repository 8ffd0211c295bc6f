import type { StateTable } from '../state/dynamodb.ts';

/**
 * The nodes this deployment registered, at pk `nodes`, sk `<node name>`. The
 * table is per deployment, so this is the one reliable answer to "which Node
 * objects are ours" once a node has left the configuration (labels say only
 * that some virtual kubelet made it). Recorded before the Node is ensured, so
 * a node is never ours in the cluster without being ours here.
 */
export const OWNED_NODES_PARTITION = 'nodes';

export class OwnedNodeStore {
  constructor(private readonly table: StateTable) {}

  /** Records the nodes not recorded yet. */
  async record(names: readonly string[], now: number, known?: readonly string[]): Promise<void> {
    const have = new Set(known ?? (await this.list()));
    for (const name of names) {
      if (have.has(name)) continue;
      await this.table.put({
        pk: OWNED_NODES_PARTITION,
        sk: name,
        name,
        recordedAt: new Date(now).toISOString(),
      });
    }
  }

  async list(): Promise<string[]> {
    return (await this.table.query(OWNED_NODES_PARTITION)).map((item) => item.sk);
  }

  /** Forgets a node whose Node and Lease are gone. */
  async forget(name: string): Promise<void> {
    await this.table.delete({ pk: OWNED_NODES_PARTITION, sk: name });
  }
}
