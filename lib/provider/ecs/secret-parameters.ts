import { createHmac, randomBytes } from 'node:crypto';
import {
  DeleteParameterCommand,
  ParameterAlreadyExists,
  ParameterNotFound,
  PutParameterCommand,
  type SSMClient,
} from '@aws-sdk/client-ssm';
import type { Clock } from '../../clock.ts';
import { isConditionFailed, type StateTable } from '../../state/dynamodb.ts';
import type { SecretValue } from './env-partition.ts';

/**
 * Pods' Secret values as SSM Parameter Store SecureStrings, which the task
 * definition's `secrets` name and ECS's agent reads with the execution role
 * when a task starts: the values are in no task definition, RunTask request,
 * DynamoDB item or log line.
 *
 * A parameter is named by its content, `<path>/<namespace>/<Secret>/<key>/<mac>`
 * where `<mac>` is an HMAC of the value under a random key of this deployment
 * (kept in the state table): replicas that see the same Secret value share
 * one parameter and so one task definition, a changed value gets a new
 * parameter, and the name tells nothing about the value to whoever can read
 * task definitions. The standard tier holds 10,000 parameters per account
 * and region.
 *
 * Each parameter's users (pod uids) are a string set in the state table; a
 * parameter is deleted when its last user is released. Deleting takes a
 * short lease on the item so that an acquire in between waits for it rather
 * than finding its parameter gone.
 */

const NAMING_KEY = { pk: 'ecs#config', sk: 'secret-naming-key' };
/** A deleter that stopped midway is taken over after this long (longer than any invocation). */
const DELETE_LEASE_MS = 5 * 60_000;
const ACQUIRE_ATTEMPTS = 20;
const ACQUIRE_WAIT_MS = 250;

export interface SecretParametersOptions {
  ssm: SSMClient;
  table: StateTable;
  clock: Clock;
  /** The SSM path every parameter is under, e.g. `/svk/prod/pod-secrets`. */
  path: string;
}

export class SecretParameters {
  #namingKey: Buffer | undefined;

  constructor(private readonly options: SecretParametersOptions) {}

  /** The naming function for translation: loads (or creates once) the deployment's naming key first. */
  async namer(): Promise<(value: SecretValue) => string> {
    const key = await this.namingKey();
    return (v) => {
      const mac = createHmac('sha256', key)
        .update(`${v.namespace}\0${v.secret}\0${v.key}\0${v.value}`)
        .digest('hex')
        .slice(0, 32);
      return `${this.options.path}/${v.namespace}/${v.secret}/${v.key}/${mac}`;
    };
  }

  /**
   * Records `uid` as a user of each parameter and makes sure it exists with
   * its value. Safe to repeat (the uid set and the content-named parameter
   * are both idempotent).
   */
  async acquire(
    uid: string,
    secrets: ReadonlyArray<{ parameter: string; value: SecretValue }>,
    signal?: AbortSignal,
  ): Promise<void> {
    for (const { parameter, value } of secrets) {
      await this.addUser(parameter, uid, signal);
      try {
        await this.options.ssm.send(
          new PutParameterCommand({
            Name: parameter,
            Value: value.value,
            Type: 'SecureString',
            Tier: 'Standard',
            Overwrite: false,
            Description: `Secret ${value.namespace}/${value.secret} key ${value.key}, for serverless-virtual-kubelet pods`,
          }),
          signal ? { abortSignal: signal } : {},
        );
      } catch (err) {
        // Content-named: an existing parameter holds this very value.
        if (!(err instanceof ParameterAlreadyExists)) throw err;
      }
    }
  }

  /** Removes `uid` from each parameter's users and deletes the parameters nobody uses any more. */
  async release(uid: string, parameters: readonly string[], signal?: AbortSignal): Promise<void> {
    const { table, clock, ssm } = this.options;
    for (const parameter of parameters) {
      const after = await table.update(usersKey(parameter), {
        expression: 'DELETE #users :uid',
        names: { '#users': 'users' },
        values: { ':uid': new Set([uid]) },
      });
      if (after.users !== undefined) continue;
      try {
        await table.update(
          usersKey(parameter),
          {
            expression: 'SET #state = :deleting, #until = :until',
            names: { '#state': 'state', '#until': 'until' },
            values: { ':deleting': 'deleting', ':until': clock.now() + DELETE_LEASE_MS },
          },
          {
            condition: {
              expression:
                'attribute_not_exists(#users) AND (attribute_not_exists(#state) OR #state = :active)',
              names: { '#users': 'users', '#state': 'state' },
              values: { ':active': 'active' },
            },
          },
        );
      } catch (err) {
        // Someone acquired it again, or another release is deleting it.
        if (isConditionFailed(err)) continue;
        throw err;
      }
      try {
        await ssm.send(
          new DeleteParameterCommand({ Name: parameter }),
          signal ? { abortSignal: signal } : {},
        );
      } catch (err) {
        if (!(err instanceof ParameterNotFound)) throw err;
      }
      await table
        .delete(usersKey(parameter), {
          condition: {
            expression: '#state = :deleting AND attribute_not_exists(#users)',
            names: { '#state': 'state', '#users': 'users' },
            values: { ':deleting': 'deleting' },
          },
        })
        .catch((err: unknown) => {
          if (!isConditionFailed(err)) throw err;
        });
    }
  }

  /** Adds the user, waiting while a release is deleting the parameter (or taking over a stale delete). */
  private async addUser(parameter: string, uid: string, signal?: AbortSignal): Promise<void> {
    const { table, clock } = this.options;
    for (let attempt = 1; ; attempt++) {
      try {
        await table.update(
          usersKey(parameter),
          {
            expression: 'ADD #users :uid SET #state = :active REMOVE #until',
            names: { '#users': 'users', '#state': 'state', '#until': 'until' },
            values: { ':uid': new Set([uid]), ':active': 'active' },
          },
          {
            condition: {
              expression: 'attribute_not_exists(#state) OR #state = :active OR #until < :now',
              names: { '#state': 'state', '#until': 'until' },
              values: { ':active': 'active', ':now': clock.now() },
            },
          },
        );
        return;
      } catch (err) {
        if (!isConditionFailed(err) || attempt >= ACQUIRE_ATTEMPTS) throw err;
        await clock.sleep(ACQUIRE_WAIT_MS, signal);
      }
    }
  }

  private async namingKey(): Promise<Buffer> {
    if (this.#namingKey) return this.#namingKey;
    const { table } = this.options;
    const found = await table.get(NAMING_KEY);
    if (typeof found?.key === 'string') {
      this.#namingKey = Buffer.from(found.key, 'base64');
      return this.#namingKey;
    }
    const key = randomBytes(32).toString('base64');
    try {
      await table.put({ ...NAMING_KEY, key }, { condition: { expression: 'attribute_not_exists(pk)' } });
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
    const stored = await table.get(NAMING_KEY);
    if (typeof stored?.key !== 'string') throw new Error('the secret naming key could not be stored');
    this.#namingKey = Buffer.from(stored.key, 'base64');
    return this.#namingKey;
  }
}

function usersKey(parameter: string): { pk: string; sk: string } {
  return { pk: `ecs#secret#${parameter}`, sk: 'users' };
}
