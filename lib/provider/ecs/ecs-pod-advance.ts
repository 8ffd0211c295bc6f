import type { Task } from '@aws-sdk/client-ecs';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import type { ProviderEventRecorder } from '../provider.ts';
import { decideEcsPod } from './ecs-pod-progress.ts';
import type { EcsPodRecord } from './ecs-pod-record.ts';
import { type EcsPodStore, isRecordConflict } from './ecs-pod-store.ts';
import * as step from './ecs-pod-transitions.ts';
import { type EcsTasks, isLaunchFailed } from './ecs-tasks.ts';
import { type RunSettings, runTaskInput } from './run-task-input.ts';
import type { SecretParameters } from './secret-parameters.ts';
import { snapshotFromTask } from './task-snapshot.ts';

/**
 * Moves one pod on: asks {@link decideEcsPod} what to do, makes that one ECS
 * call, writes the record conditionally (ecs-pod-transitions.ts says how it
 * changes) and asks again, until nothing is left to do. A write that loses
 * to another looker reads the record again and decides from what it wrote,
 * so each step happens once however many invocations look at the pod; the
 * ECS calls themselves are safe to repeat (RunTask's clientToken, StopTask
 * of a stopping task).
 */

export interface EcsPodAdvancerOptions {
  tasks: EcsTasks;
  store: EcsPodStore;
  secrets: SecretParameters;
  clock: Clock;
  log: Logger;
  run: RunSettings;
  /** A task nothing told us about for this long is described again. */
  pollMs: number;
  /** Where the Events of a failed liveness health check are recorded (Unhealthy, Killing); none when absent. */
  events?: ProviderEventRecorder;
}

// A pod needs at most: restart, launch, then nothing; a few more for lost races.
const MAX_STEPS = 8;

export class EcsPodAdvancer {
  constructor(private readonly options: EcsPodAdvancerOptions) {}

  /**
   * Advances the pod until nothing is left to do now. Resolves with the
   * record as last written or read, or undefined when its name no longer
   * holds this uid.
   */
  async advance(record: EcsPodRecord, signal?: AbortSignal): Promise<EcsPodRecord | undefined> {
    let current: EcsPodRecord | undefined = record;
    // A call that ECS answered without moving the task on (not visible yet) is not repeated in one look.
    const asked = new Set<string>();
    for (let i = 0; i < MAX_STEPS && current; i++) {
      signal?.throwIfAborted();
      const action = decideEcsPod(current, this.options.clock.now(), this.options.pollMs);
      if (action.kind === 'none') return current;
      const key = `${action.kind}:${'arn' in action ? action.arn : current.current.seq}`;
      if ((action.kind === 'stop' || action.kind === 'refresh') && asked.has(key)) return current;
      asked.add(key);
      try {
        current = await this.act(current, action, signal);
      } catch (err) {
        if (!isRecordConflict(err)) throw err;
        current = await this.reread(current);
      }
    }
    return current;
  }

  /** Applies a task's state that ECS reported (DescribeTasks, an event), then advances. */
  async observe(record: EcsPodRecord, task: Task, signal?: AbortSignal): Promise<EcsPodRecord | undefined> {
    const snapshot = snapshotFromTask(task);
    if (!snapshot) return record;
    return this.write(
      record,
      (r) =>
        step.observed(r, snapshot, this.options.clock.now()) ?? {
          ...r,
          observedAt: this.options.clock.now(),
        },
      signal,
    );
  }

  /** DescribeTasks reported the pod's current task MISSING. */
  async missing(record: EcsPodRecord, signal?: AbortSignal): Promise<EcsPodRecord | undefined> {
    return this.write(record, (r) => step.missing(r, this.options.clock.now()), signal);
  }

  /** Writes `change(record)`, re-reading and re-applying on a lost race, then advances. */
  async write(
    record: EcsPodRecord,
    change: (r: EcsPodRecord) => Omit<EcsPodRecord, 'version'> | undefined,
    signal?: AbortSignal,
  ): Promise<EcsPodRecord | undefined> {
    let current: EcsPodRecord | undefined = record;
    for (let i = 0; i < MAX_STEPS && current; i++) {
      const next = change(current);
      if (!next) return this.advance(current, signal);
      try {
        return this.advance(await this.options.store.replace(current, next), signal);
      } catch (err) {
        if (!isRecordConflict(err)) throw err;
        current = await this.reread(current);
      }
    }
    return current;
  }

  private async act(
    record: EcsPodRecord,
    action: Exclude<ReturnType<typeof decideEcsPod>, { kind: 'none' }>,
    signal?: AbortSignal,
  ): Promise<EcsPodRecord> {
    const { tasks, store, clock } = this.options;
    switch (action.kind) {
      case 'launch':
        return this.launch(record, signal);
      case 'restart':
        this.options.log.info(
          {
            pod: `${record.namespace}/${record.name}`,
            uid: record.uid,
            restarts: record.restarts + 1,
            replace: action.replace,
          },
          'task stopped: starting the pod again as a new task',
        );
        return store.replace(record, step.restarted(record, clock.now()));
      case 'stop': {
        const why = action.liveness
          ? `container ${action.liveness} failed its liveness probe (ECS health check UNHEALTHY)`
          : record.deleteRequestedAt !== undefined
            ? 'deleted in Kubernetes'
            : 'replaced: its spec changed';
        const answer = await tasks.stop(action.arn, `pod ${record.namespace}/${record.name} ${why}`, signal);
        const stopped = await store.replace(record, step.stopAnswered(record, answer, clock.now()));
        if (action.liveness) await this.livenessEvents(record, action.liveness);
        return stopped;
      }
      case 'refresh': {
        const { tasks: found } = await tasks.describe([action.arn], signal);
        const task = found.find((t) => t.taskArn === action.arn);
        const now = clock.now();
        const snapshot = task ? snapshotFromTask(task) : undefined;
        const next = snapshot
          ? (step.observed(record, snapshot, now) ?? { ...record, observedAt: now })
          : step.missing(record, now);
        return store.replace(record, next);
      }
      case 'gone':
        await this.options.secrets.release(record.uid, record.secretParameters, signal);
        return store.replace(record, step.gone(record, clock.now()));
    }
  }

  /** The kubelet's Events for a container its liveness probe kills (ECS reports no probe output). */
  private async livenessEvents(record: EcsPodRecord, container: string): Promise<void> {
    const events = this.options.events;
    if (!events) return;
    const pod = {
      metadata: { namespace: record.namespace, name: record.name, uid: record.uid },
      spec: { nodeName: record.node, containers: [] },
    };
    const restart = record.restartPolicy !== 'Never' ? ', will be restarted' : '';
    await events.record(pod, 'Warning', 'Unhealthy', 'Liveness probe failed: ECS health check UNHEALTHY');
    await events.record(pod, 'Normal', 'Killing', `Container ${container} failed liveness probe${restart}`);
  }

  private async launch(record: EcsPodRecord, signal?: AbortSignal): Promise<EcsPodRecord> {
    const { tasks, store, clock, run } = this.options;
    let answer: Task | string;
    try {
      answer = await tasks.run(runTaskInput(record, record.current.seq, run), signal);
    } catch (err) {
      if (!isLaunchFailed(err)) throw err;
      return store.replace(record, step.launchFailed(record, err.message));
    }
    return store.replace(record, step.launched(record, answer, clock.now()));
  }

  private async reread(record: EcsPodRecord): Promise<EcsPodRecord | undefined> {
    const fresh = await this.options.store.get(record.namespace, record.name);
    return fresh?.uid === record.uid ? fresh : undefined;
  }
}
