import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import type { StateTable } from '../../state/dynamodb.ts';
import type { NodeProvider, PodProvider, ProviderEventRecorder } from '../provider.ts';
import type { ProviderContext } from '../provider-factory.ts';
import { kubeVolumeSources, type VolumeSources } from '../volume-sources.ts';
import { createEcsAwsClients, type EcsAwsClients } from './aws-clients.ts';
import { EcsLogs } from './ecs-logs.ts';
import { EcsNodeProvider } from './ecs-node.ts';
import { EcsPodAdvancer } from './ecs-pod-advance.ts';
import { EcsPodStore } from './ecs-pod-store.ts';
import { EcsPodProvider } from './ecs-pods.ts';
import { EcsTasks } from './ecs-tasks.ts';
import { OrphanTasks } from './orphan-tasks.ts';
import { PodCreator } from './pod-creator.ts';
import { SecretParameters } from './secret-parameters.ts';
import type { EcsSettings } from './settings.ts';
import { TaskDefinitions } from './task-definitions.ts';

/** What the ECS provider needs besides its settings (the registry's provider context). */
export interface EcsProviderContext {
  config: {
    node: { capacity: Readonly<Record<string, string>>; internalIp?: string };
    pods: { maxParallel: number };
  };
  table: StateTable;
  clock: Clock;
  log: Logger;
  region: string;
  kubeletVersion: string;
  /** Where Events of failed liveness health checks are recorded (the provider context's). */
  events?: ProviderEventRecorder;
  /** The AWS clients; built for `region` (and the settings' endpoint) when absent. */
  clients?: EcsAwsClients;
  /** Where the ConfigMaps and Secrets of file volumes are read; without it a pod with such volumes is not started. */
  volumeSources?: VolumeSources;
}

/** The ECS provider's parts, for the task-state function and tests that need more than the two halves. */
export interface EcsProviderParts {
  nodeProvider: EcsNodeProvider;
  podProvider: EcsPodProvider;
  store: EcsPodStore;
  advancer: EcsPodAdvancer;
  settings: EcsSettings;
}

/** Builds the ECS Fargate provider. */
export async function createProviders(
  settings: EcsSettings,
  context: EcsProviderContext & Partial<Pick<ProviderContext, 'kube'>>,
): Promise<{ nodeProvider: NodeProvider; podProvider: PodProvider }> {
  const { nodeProvider, podProvider } = buildEcsProvider(settings, {
    ...context,
    ...(context.kube && !context.volumeSources
      ? { volumeSources: kubeVolumeSources(context.kube.core) }
      : {}),
  });
  return { nodeProvider, podProvider };
}

export function buildEcsProvider(settings: EcsSettings, context: EcsProviderContext): EcsProviderParts {
  const { table, clock, region, config } = context;
  const log = context.log.child({ provider: 'ecs-fargate' });
  const clients = context.clients ?? createEcsAwsClients(region, settings.endpoint);
  const tasks = new EcsTasks(clients.ecs, settings.cluster);
  const store = new EcsPodStore(table);
  const secrets = new SecretParameters({ ssm: clients.ssm, table, clock, path: settings.secretsPath });
  const pollMs = settings.statusPollMs;
  const advancer = new EcsPodAdvancer({
    tasks,
    store,
    secrets,
    clock,
    log,
    run: settings,
    pollMs,
    ...(context.events ? { events: context.events } : {}),
  });
  const creator = new PodCreator({
    store,
    advancer,
    secrets,
    tasks,
    clock,
    log,
    definitions: new TaskDefinitions({ ecs: clients.ecs, table, clock, owner: randomUUID() }),
    translation: {
      familyPrefix: settings.familyPrefix,
      executionRoleArn: settings.executionRoleArn,
      ...(settings.taskRoleArn ? { taskRoleArn: settings.taskRoleArn } : {}),
      logGroup: settings.logGroup,
      region,
      cpuArchitecture: settings.cpuArchitecture,
      registryCredentials: settings.registryCredentials,
      volumeImage: settings.volumeImage,
    },
    ...(context.volumeSources ? { volumeSources: context.volumeSources } : {}),
    allocatable: config.node.capacity,
    allowlist: settings.overrideAllowlist,
  });
  const podProvider = new EcsPodProvider({
    store,
    advancer,
    creator,
    tasks,
    orphans: new OrphanTasks({ tasks, store, clock, familyPrefix: settings.familyPrefix, pollMs }),
    logs: new EcsLogs({ logs: clients.logs, store, clock, logGroup: settings.logGroup }),
    clock,
    log,
    ...(config.node.internalIp ? { hostIp: config.node.internalIp } : {}),
    maxParallel: config.pods.maxParallel,
    pollMs,
  });
  const nodeProvider = new EcsNodeProvider({
    tasks,
    cluster: settings.cluster,
    capacity: config.node.capacity,
    kubeletVersion: context.kubeletVersion,
    cpuArchitecture: settings.cpuArchitecture,
    clock,
  });
  return { nodeProvider, podProvider, store, advancer, settings };
}
