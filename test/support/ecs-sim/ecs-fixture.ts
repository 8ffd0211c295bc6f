import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import type { V1Container, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { createLogger, type LogDestination } from '../../../lib/log/logger.ts';
import { buildEcsProvider, type EcsProviderParts } from '../../../lib/provider/ecs/factory.ts';
import { parseEcsSettings } from '../../../lib/provider/ecs/settings.ts';
import {
  applyTaskStateEvent,
  parseTaskStateEvent,
  type TaskStateOutcome,
} from '../../../lib/provider/ecs/task-state-event.ts';
import type { VolumeSources } from '../../../lib/provider/volume-sources.ts';
import type { StateTable } from '../../../lib/state/dynamodb.ts';
import { FakeClock } from '../fake-clock.ts';
import { freshTable } from '../kube.ts';
import { AwsSimulation } from './aws-sim.ts';
import { scriptBehaviour } from './script-behaviour.ts';
import type { ContainerBehaviour } from './sim-types.ts';

/** The settings every provider test starts from (SVK_ECS_* as a deployment sets them). */
export const ECS_TEST_ENV: Readonly<Record<string, string>> = {
  SVK_ECS_CLUSTER: 'pods',
  SVK_ECS_SUBNETS: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210',
  SVK_ECS_SECURITY_GROUPS: 'sg-0123456789abcdef0',
  SVK_ECS_EXECUTION_ROLE_ARN: 'arn:aws:iam::123456789012:role/svk-task-execution',
  SVK_ECS_TASK_ROLE_ARN: 'arn:aws:iam::123456789012:role/svk-pods',
  SVK_ECS_LOG_GROUP: '/svk/test/pods',
  SVK_ECS_FAMILY_PREFIX: 'svk-test',
  SVK_ECS_SECRETS_PATH: '/svk/test/pod-secrets',
};

export interface EcsFixtureOptions {
  table: StateTable;
  env?: Record<string, string>;
  behaviour?: ContainerBehaviour;
  /** Deliver the simulation's events to the task-state handler as the test pumps. Default true. */
  events?: boolean;
  /** Where file volumes' ConfigMaps and Secrets are read (none: pods with such volumes are not started). */
  volumeSources?: VolumeSources;
  /** Where the provider's log lines go (JSON lines); nowhere by default. */
  logTo?: LogDestination;
}

/**
 * The ECS provider over the AWS simulation in process (the real SDK clients,
 * only their transport replaced) and the test's DynamoDB Local table, on one
 * fake clock that the simulation's task lifecycle follows too.
 */
export class EcsFixture {
  readonly clock = new FakeClock({ wall: Date.parse('2026-03-01T10:00:00Z'), autoAdvance: true });
  readonly aws: AwsSimulation;
  readonly parts: EcsProviderParts;
  readonly delivered: Array<Record<string, unknown>> = [];
  readonly outcomes: TaskStateOutcome[] = [];
  #queue: Array<Record<string, unknown>> = [];

  constructor(options: EcsFixtureOptions) {
    this.aws = new AwsSimulation({
      now: () => this.clock.now(),
      behaviour: options.behaviour ?? scriptBehaviour,
    });
    if (options.events !== false)
      this.aws.ecs.events = { deliver: (e) => this.#queue.push(e), duplicateEvery: 0, delayEvery: 0 };
    const parsed = parseEcsSettings({ ...ECS_TEST_ENV, ...options.env });
    if (!parsed.ok) throw new Error(`test settings: ${JSON.stringify(parsed.issues)}`);
    this.parts = buildEcsProvider(parsed.settings, {
      config: { node: { capacity: { cpu: '100', memory: '400Gi', pods: '500' } }, pods: { maxParallel: 16 } },
      table: options.table,
      clock: this.clock,
      log: options.logTo
        ? createLogger({ level: 'debug' }, options.logTo)
        : createLogger({ level: 'silent' }),
      region: this.aws.region,
      kubeletVersion: 'v1.20.2-test',
      clients: this.aws.clients(),
      ...(options.volumeSources ? { volumeSources: options.volumeSources } : {}),
    });
  }

  get provider() {
    return this.parts.podProvider;
  }

  /** Moves time on, lets the simulation take every due step, and hands its events to the task-state handler. */
  async pump(ms = 0): Promise<void> {
    if (ms > 0) await this.clock.advance(ms);
    this.aws.ecs.tick();
    while (this.#queue.length > 0) {
      const event = this.#queue.shift();
      if (!event) break;
      this.delivered.push(event);
      this.outcomes.push(await applyTaskStateEvent(this.parts, parseTaskStateEvent(event), this.clock.now()));
    }
  }

  /** Pumps in `stepMs` steps until `check` holds (at most `maxMs` of simulated time). */
  async until<T>(
    check: () => Promise<T | undefined | false>,
    options: { stepMs?: number; maxMs?: number } = {},
  ): Promise<T> {
    const step = options.stepMs ?? 100;
    for (let spent = 0; spent <= (options.maxMs ?? 600_000); spent += step) {
      await this.pump(spent === 0 ? 0 : step);
      const value = await check();
      if (value !== undefined && value !== false) return value;
    }
    throw new Error('condition not reached in simulated time');
  }
}

/** A pod on node vk-1 with containers of `sh -c <script>`, env resolved as the pipeline hands it over. */
export function ecsPod(
  namespace: string,
  name: string,
  containers: Array<Partial<V1Container> & { name: string; script?: string }>,
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
  uid: string = randomUUID(),
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace, name, uid },
    spec: {
      nodeName: 'vk-1',
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      ...spec,
      containers: containers.map(({ script, ...c }) => ({
        image: 'public.ecr.aws/docker/library/busybox:1.36',
        ...(script !== undefined ? { command: ['sh', '-c', script] } : {}),
        ...c,
      })),
    },
  };
}

export { randomUUID };

/**
 * The fixtures of one test file, on one fresh state table: registers the
 * file's hooks (the table before its tests; after them, that every request
 * each fixture sent fits the published API model) and returns the fixture
 * factory and the table.
 */
export function ecsFixtures(): {
  fixture: (options?: Omit<EcsFixtureOptions, 'table'>) => EcsFixture;
  table: () => StateTable;
} {
  let table: StateTable | undefined;
  const fixtures: EcsFixture[] = [];
  before(async () => {
    ({ table } = await freshTable());
  });
  after(() => {
    for (const f of fixtures)
      assert.deepEqual(f.aws.violations, [], 'every request fits the published API model');
  });
  const tableOf = (): StateTable => {
    if (!table) throw new Error('the state table is made before the tests run');
    return table;
  };
  return {
    fixture: (options = {}) => {
      const f = new EcsFixture({ table: tableOf(), ...options });
      fixtures.push(f);
      return f;
    },
    table: tableOf,
  };
}

/** The status of the pod's container `name`. */
export const statusOf = (pod: V1Pod | undefined, name: string): V1ContainerStatus | undefined =>
  pod?.status?.containerStatuses?.find((c) => c.name === name);
