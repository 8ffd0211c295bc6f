import { type Invocation, invocationLog } from '../invocation.ts';
import { podKey } from '../kube/pod-key.ts';
import type { Logger } from '../log/logger.ts';
import { KnownPodStore } from '../pod/known/known-pods.ts';
import { type StatusWriteResult, writeReportedStatus } from '../pod/status/pod-status-writes.ts';
import { ecsPodStatus } from '../provider/ecs/ecs-pod-status.ts';
import { buildEcsProvider, type EcsProviderParts } from '../provider/ecs/factory.ts';
import {
  applyTaskStateEvent,
  parseTaskStateEvent,
  type TaskStateDetail,
} from '../provider/ecs/task-state-event.ts';
import { type Dependencies, KUBELET_VERSION } from './dependencies.ts';

/**
 * The ecs-task-state function's entry point: an "ECS Task State Change"
 * event (from the rule for our cluster and task families on the account's
 * default bus) is applied to the pod whose task it is, the pod moves on (a
 * stopped task restarts at once when its back-off allows), and its status
 * is written to the API server at once, through pod-status's own write path
 * (recorded in the known-pod record, so pod-status does not write it again).
 * Events arrive at least once and in no order: an older or repeated state
 * changes nothing.
 */

/** What one event did, for logs and tests. */
export interface TaskStateResult {
  outcome: 'applied' | 'stale' | 'ignored';
  pod?: string;
  uid?: string;
  /** What became of the status write: none for a stale event; `superseded` when a newer state was recorded meanwhile. */
  status?: StatusWriteResult | 'not-known' | 'superseded';
  reason?: string;
}

/** A well-formed ECS Task State Change event's detail, or an error naming every bad field (nothing is written). */
export function validTaskStateEvent(log: Logger, event: unknown): TaskStateDetail {
  try {
    return parseTaskStateEvent(event);
  } catch (err) {
    log.error({ err }, 'rejected task-state event: nothing done');
    throw err;
  }
}

const built = new WeakMap<Dependencies, EcsProviderParts>();

/** The ECS provider's parts for these dependencies, built once per cold start. */
function ecsParts(deps: Dependencies): EcsProviderParts {
  const known = built.get(deps);
  if (known) return known;
  const { config } = deps;
  if (config.provider.name !== 'ecs-fargate')
    throw new Error(`ecs-task-state needs SVK_PROVIDER=ecs-fargate, not ${config.provider.name}`);
  const parts = buildEcsProvider(config.provider.settings, {
    config,
    table: deps.table,
    clock: deps.clock,
    log: deps.log,
    region: config.dynamodb.region,
    kubeletVersion: KUBELET_VERSION,
  });
  built.set(deps, parts);
  return parts;
}

export async function ecsTaskState(
  deps: Dependencies,
  invocation: Invocation,
  detail: TaskStateDetail,
): Promise<TaskStateResult> {
  const log = invocationLog(deps.log, invocation).child({ task: detail.taskArn, version: detail.version });
  const parts = ecsParts(deps);
  const applied = await applyTaskStateEvent(parts, detail, deps.clock.now(), invocation.signal);
  // The status written below is the pod as this application left it.
  const readAtMs = deps.clock.now();
  if (applied.outcome === 'ignored') {
    log.debug({ reason: applied.reason }, 'task-state event ignored');
    return { outcome: 'ignored', reason: applied.reason };
  }
  const { record } = applied;
  const fields = { pod: podKey(record), uid: record.uid, node: record.node };
  if (applied.outcome === 'stale') {
    // The invocation that applied the newer state writes its status.
    log.debug({ ...fields, lastStatus: detail.lastStatus }, "task-state event older than the pod's record");
    return { outcome: 'stale', ...fields };
  }
  const knownPods = new KnownPodStore(deps.table);
  const known = await knownPods.get(record.node, record.namespace, record.name);
  if (!known || known.uid !== record.uid) {
    // pod-sync has not recorded the pod yet: it, or pod-status, writes the status.
    log.debug({ ...fields, outcome: applied.outcome }, 'task-state event applied; the pod is not known yet');
    return { outcome: applied.outcome, ...fields, status: 'not-known' };
  }
  // Events of one task are handled concurrently: leave the write to whoever recorded a newer state.
  const latest = await parts.store.get(record.namespace, record.name);
  if (latest?.uid === record.uid && latest.version !== record.version) {
    log.debug({ ...fields }, 'task-state event superseded before its status was written');
    return { outcome: applied.outcome, ...fields, status: 'superseded' };
  }
  const hostIp = deps.config.node.internalIp;
  const status = await writeReportedStatus(
    { core: deps.kube.core, knownPods },
    known,
    ecsPodStatus(record, hostIp),
    { readAtMs },
  );
  log.info(
    { ...fields, outcome: applied.outcome, status, lastStatus: detail.lastStatus },
    'task-state event applied',
  );
  return { outcome: applied.outcome, ...fields, status };
}
