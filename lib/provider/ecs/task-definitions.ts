import { type ECSClient, RegisterTaskDefinitionCommand } from '@aws-sdk/client-ecs';
import type { Clock } from '../../clock.ts';
import { isConditionFailed, type StateTable } from '../../state/dynamodb.ts';
import type { TaskDefinitionShape } from './task-translation.ts';

/**
 * Task definitions registered once per distinct shape. A family is named by
 * its content's hash, so every pod of one shape (all replicas of a
 * Deployment) uses one definition; the state table remembers its ARN
 * (`ecs#taskdef#<family>` / `definition`), so a burst of a thousand
 * replicas across a hundred concurrent invocations registers it once:
 * RegisterTaskDefinition is throttled hard (a few calls per second per
 * account). The first caller takes a short claim on the item and registers;
 * the others wait for its ARN (or take over a claim left by a crash).
 *
 * Definitions are never deregistered: an ACTIVE definition costs nothing,
 * and a pod of the same shape may come back any time.
 */

const CLAIM_MS = 30_000;
const WAIT_MS = 250;

export interface TaskDefinitionsOptions {
  ecs: ECSClient;
  table: StateTable;
  clock: Clock;
  /** How long a caller waits for another's registration before giving up (it is retried). Default 20 s. */
  waitMs?: number;
  /** This caller's identity in a claim (an invocation's request id, say). */
  owner: string;
}

export class TaskDefinitions {
  readonly #known = new Map<string, string>();

  constructor(private readonly options: TaskDefinitionsOptions) {}

  /** The ARN of `family`'s definition, registering it when no one has. */
  async ensure(family: string, definition: TaskDefinitionShape, signal?: AbortSignal): Promise<string> {
    const cached = this.#known.get(family);
    if (cached) return cached;
    const { table, clock } = this.options;
    const key = { pk: `ecs#taskdef#${family}`, sk: 'definition' };
    const deadline = clock.now() + (this.options.waitMs ?? 20_000);
    for (;;) {
      signal?.throwIfAborted();
      const item = await table.get(key);
      if (typeof item?.arn === 'string') {
        this.#known.set(family, item.arn);
        return item.arn;
      }
      const claimedUntil = typeof item?.claimUntil === 'number' ? item.claimUntil : 0;
      if (claimedUntil > clock.now()) {
        if (clock.now() >= deadline)
          throw new Error(`task definition ${family} is being registered by another invocation; retry`);
        await clock.sleep(WAIT_MS, signal);
        continue;
      }
      try {
        await table.put(
          { ...key, claimUntil: clock.now() + CLAIM_MS, owner: this.options.owner },
          {
            condition: {
              expression: 'attribute_not_exists(pk) OR (attribute_not_exists(arn) AND claimUntil < :now)',
              values: { ':now': clock.now() },
            },
          },
        );
      } catch (err) {
        if (isConditionFailed(err)) continue;
        throw err;
      }
      return this.register(key, family, definition, signal);
    }
  }

  private async register(
    key: { pk: string; sk: string },
    family: string,
    definition: TaskDefinitionShape,
    signal?: AbortSignal,
  ): Promise<string> {
    const out = await this.options.ecs.send(
      new RegisterTaskDefinitionCommand({ ...definition, family }),
      signal ? { abortSignal: signal } : {},
    );
    const arn = out.taskDefinition?.taskDefinitionArn;
    if (!arn) throw new Error(`RegisterTaskDefinition of ${family} returned no ARN`);
    await this.options.table.put({ ...key, arn, registeredAt: this.options.clock.now() });
    this.#known.set(family, arn);
    return arn;
  }
}
