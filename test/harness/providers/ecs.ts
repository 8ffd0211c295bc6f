import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { systemClock } from '../../../lib/clock.ts';
import type { LocalDeployment } from '../../../lib/local/local-deployment.ts';
import type { BusEvent } from '../../../lib/local/put-events-entry.ts';
import { createLogger } from '../../../lib/log/logger.ts';
import { buildEcsProvider } from '../../../lib/provider/ecs/factory.ts';
import {
  nodeStartedBy,
  parseTaskGroup,
  TAG_NAME,
  TAG_NAMESPACE,
} from '../../../lib/provider/ecs/run-task-input.ts';
import { parseEcsSettings } from '../../../lib/provider/ecs/settings.ts';
import { VOLUME_WRITER_NAME } from '../../../lib/provider/ecs/volume-writer.ts';
import { AwsSimulation } from '../../support/ecs-sim/aws-sim.ts';
import { ECS_TEST_ENV } from '../../support/ecs-sim/ecs-fixture.ts';
import { shellBehaviour } from '../../support/ecs-sim/shell-behaviour.ts';
import type { SimTask } from '../../support/ecs-sim/sim-types.ts';
import {
  runVolumeWriter,
  type WrittenFile,
  withVolumeWriter,
  writtenFiles,
} from '../../support/ecs-sim/volume-writer-run.ts';
import type {
  PodRef,
  ProbeContext,
  ProbedHistory,
  ProbedPod,
  ProviderProbe,
  ProviderSetup,
} from '../provider-setup.ts';

/**
 * The ECS Fargate provider in the harness, over the AWS simulation
 * (test/support/ecs-sim/): no ECS exists offline. The simulation serves ECS,
 * SSM and CloudWatch Logs on a loopback port, which the functions' real SDK
 * clients reach through SVK_ECS_ENDPOINT; its tasks move along in real time
 * and their "ECS Task State Change" events go to the deployment's default
 * bus (duplicated and out of order now and then), whose rule invokes
 * ecs-task-state, as in AWS. The probe reads the simulation's tasks.
 */
export interface EcsProviderSetup extends ProviderSetup {
  readonly aws: AwsSimulation;
}

export function ecsProviderSetup(options: { env?: Record<string, string> } = {}): EcsProviderSetup {
  const aws = new AwsSimulation({ behaviour: withVolumeWriter(shellBehaviour) });
  let endpoint = '';
  return {
    name: 'ecs-fargate',
    image: 'public.ecr.aws/docker/library/busybox:1.36',
    aws,
    // StopTask takes no timeout: SIGKILL comes after the containers' stopTimeout, at most 120 s.
    forcedStopSeconds: 120,
    start: async () => {
      endpoint = await aws.listen();
      aws.startTicking(100);
    },
    stop: () => aws.close(),
    env: () => ({
      ...ECS_TEST_ENV,
      SVK_ECS_ENDPOINT: endpoint,
      SVK_ECS_STATUS_POLL_SECONDS: '10',
      ...options.env,
    }),
    connect: (deployment: LocalDeployment) => {
      aws.ecs.events = {
        deliver: (event) => deployment.awsBus.deliverServiceEvent(busEvent(event)),
        duplicateEvery: 3,
        delayEvery: 4,
      };
    },
    probe: (context) => new EcsProbe(aws, context),
    notApplicable: {
      localhost:
        'the ECS simulation runs no processes, so nothing listens on localhost (on Fargate the containers of a task share its network namespace)',
      'init-containers-files':
        "the ECS simulation runs no processes and has no filesystem (order is checked through the containers' times)",
      'startup-probe': 'Fargate has no startup stage of a health check: startup probes are refused by name',
      prestop: 'ECS runs no lifecycle hooks: preStop is refused by name',
      'termination-message':
        'a Fargate task has no file to read back after it stopped, and the simulation no log: the message is not reported',
      'volume-update':
        "refused on Fargate: a task's volume writer writes the files once, when the task starts; a changed ConfigMap, Secret or label never reaches them (the pod keeps running with the files it started with)",
      'pod-extras':
        'fsGroup, seLinuxOptions and hostAliases are refused by name on Fargate; status.podIP in env is empty there (the task has its address only once it runs)',
      'projected-token':
        'projected serviceAccountToken sources are refused by name on Fargate (the simulation runs no processes either)',
      'projected-token-refresh': 'projected serviceAccountToken sources are refused by name on Fargate',
    },
  };
}

function busEvent(event: Record<string, unknown>): BusEvent {
  const text = (key: string) => (typeof event[key] === 'string' ? String(event[key]) : '');
  const detail = event.detail;
  return {
    version: '0',
    id: text('id'),
    'detail-type': text('detail-type'),
    source: text('source'),
    account: text('account'),
    time: text('time'),
    region: text('region'),
    resources: Array.isArray(event.resources) ? event.resources.map(String) : [],
    detail: typeof detail === 'object' && detail !== null && !Array.isArray(detail) ? { ...detail } : {},
  };
}

class EcsProbe implements ProviderProbe {
  constructor(
    private readonly aws: AwsSimulation,
    private readonly context: ProbeContext,
  ) {}

  async pods(node: string): Promise<ProbedPod[]> {
    const startedBy = nodeStartedBy(this.prefix(), node);
    const byUid = new Map<string, ProbedPod>();
    for (const task of this.aws.ecs.tasks.values()) {
      const uid = parseTaskGroup(task.group)?.uid;
      if (!uid || task.startedBy !== startedBy || task.lastStatus === 'STOPPED') continue;
      const tag = (key: string) => task.tags.find((t) => t.key === key)?.value ?? '';
      byUid.set(uid, {
        namespace: tag(TAG_NAMESPACE),
        name: tag(TAG_NAME),
        uid,
        node,
        running: runs(task) || (byUid.get(uid)?.running ?? false),
      });
    }
    return [...byUid.values()];
  }

  async history(ref: PodRef): Promise<ProbedHistory | undefined> {
    const tasks = this.aws.ecs.tasksOf(ref.uid);
    if (tasks.length === 0) return undefined;
    return {
      // The first task of a pod is the one started with the pod uid as its clientToken.
      creates: tasks.filter((t) => t.group === `svk:${ref.uid}:0`).length,
      deletes: tasks.filter((t) => t.stopCode === 'UserInitiated').length,
      running: tasks.some(runs),
    };
  }

  /** A pod put into ECS behind the pipeline's back: created by the provider itself, in this process, on the same simulation. */
  async injectPod(pod: V1Pod): Promise<void> {
    const parsed = parseEcsSettings({ ...this.context.env });
    if (!parsed.ok) throw new Error(`ECS settings: ${JSON.stringify(parsed.issues)}`);
    const { podProvider } = buildEcsProvider(parsed.settings, {
      config: { node: { capacity: {} }, pods: { maxParallel: 4 } },
      table: this.context.table,
      clock: systemClock,
      log: createLogger({ level: 'silent' }),
      region: this.context.env.AWS_REGION ?? 'eu-west-1',
      kubeletVersion: 'v1.20.2-test',
      clients: this.aws.clients(),
    });
    await podProvider.createPod(pod);
  }

  async purge(nodes: readonly string[]): Promise<void> {
    const ours = new Set(nodes.map((n) => nodeStartedBy(this.prefix(), n)));
    for (const task of this.aws.ecs.tasks.values()) {
      if (!task.startedBy || !ours.has(task.startedBy)) continue;
      task.lastStatus = 'STOPPED';
      task.desiredStatus = 'STOPPED';
      for (const c of task.containers) c.lastStatus = 'STOPPED';
    }
  }

  /**
   * The files the pod's newest task's volume writer wrote into `volume`: its
   * script run again for real, on the environment ECS's agent resolved for
   * it, into a directory standing in for the task volume it mounts there.
   */
  async volumeFiles(ref: PodRef, volume: string): Promise<Map<string, WrittenFile> | undefined> {
    const task = this.aws.ecs
      .tasksOf(ref.uid)
      .sort((a, b) => a.createdAt - b.createdAt)
      .at(-1);
    const writer = task?.containers.find((c) => c.name === VOLUME_WRITER_NAME);
    if (!task || !writer) return undefined;
    const definition = [...this.aws.ecs.definitions.values()]
      .flat()
      .find((d) => d.taskDefinitionArn === task.taskDefinitionArn);
    const defs = (definition?.containerDefinitions ?? []) as Array<{
      name?: string;
      entryPoint?: string[];
      command?: string[];
      mountPoints?: Array<{ sourceVolume?: string; containerPath?: string }>;
    }>;
    const def = defs.find((c) => c.name === VOLUME_WRITER_NAME);
    const mount = def?.mountPoints?.find((m) => m.sourceVolume === volume);
    if (!def || !mount?.containerPath) return undefined;
    const mounts = (def.mountPoints ?? []).map((m) => m.containerPath?.split('/').pop() ?? '');
    const argv = [...(def.entryPoint ?? []), ...(def.command ?? [])];
    const { exitCode, root, stderr } = runVolumeWriter(argv, writer.env, mounts);
    try {
      if (exitCode !== 0) throw new Error(`the volume writer failed (${exitCode}): ${stderr}`);
      return writtenFiles(join(root, mount.containerPath.split('/').pop() ?? ''));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }

  async backendText(): Promise<string> {
    return JSON.stringify([this.aws.ecs.requests, [...this.aws.logs.streams.entries()]]);
  }

  private prefix(): string {
    return this.context.env.SVK_ECS_FAMILY_PREFIX ?? 'serverless-virtual-kubelet';
  }
}

/** Some process of the task runs (also while it is being stopped). */
function runs(task: SimTask): boolean {
  return task.lastStatus !== 'STOPPED' && task.containers.some((c) => c.lastStatus === 'RUNNING');
}
