import type { NodeConfigDocument } from '../config/node-config-document.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import type { ProviderNodeCondition } from '../provider/provider.ts';
import type { AssignedConfig } from './assigned-config.ts';
import { type CheckpointState, type ConfigRef, describeRef, sameRef } from './checkpoint-store.ts';

/** The node condition that says which config is in use and why. */
export const CONFIG_OK = 'ConfigOK';

/** Where the assigned config lives. */
export interface ConfigSource {
  namespace: string;
  name: string;
}

/** What reading the ConfigMap gave. */
export type FetchedConfigMap =
  | { kind: 'off' }
  | { kind: 'absent' }
  | { kind: 'error'; message: string }
  | { kind: 'found'; ref: ConfigRef; data: Readonly<Record<string, string>> };

/** A candidate config, validated: freshly parsed from the ConfigMap, or loaded from its checkpoint. */
export interface Candidate {
  ref: ConfigRef;
  config: AssignedConfig;
  fromCheckpoint: boolean;
}

export interface DecisionInput {
  source?: ConfigSource;
  local: NodeSettings;
  fetched: FetchedConfigMap;
  state: CheckpointState | undefined;
  /** Why the state record could not be used (then `state` is undefined). */
  stateCorrupt?: string;
  /** The ConfigMap's config: from its checkpoint when it is the current one, else parsed from its data. */
  assigned?: Candidate;
  /** The last-known-good, loaded from its checkpoint (the same object as `assigned` when they are one). */
  lastKnownGood?: Candidate;
  /** Epoch milliseconds. */
  now: number;
  trialMs: number;
}

export interface Decision {
  settings: NodeSettings;
  using: 'local' | 'assigned' | 'last-known-good';
  /** The assigned config in use (assigned or last-known-good). */
  ref?: ConfigRef;
  condition: ProviderNodeCondition;
  /** A new checkpoint to write (before the state). */
  checkpoint?: { ref: ConfigRef; document: NodeConfigDocument };
  /** The state to write when it changes; 'clear' forgets it. */
  nextState?: CheckpointState | 'clear';
  /** Why the assigned config (or a checkpoint) was not used, for the error log. */
  rejection?: string;
}

/**
 * Which config a node uses and why, from everything already read (kubelet's
 * dynamic config rules): the assigned config when it loads, parses and
 * validates; otherwise the last-known-good, or the local config when there
 * is none (or its checkpoint is corrupt). An assigned config in use for the
 * trial period becomes the last-known-good. A removed ConfigMap means local
 * config and a clean slate. Pure: the caller writes what it returns.
 */
export function decide(input: DecisionInput): Decision {
  const { source, local, fetched, state, assigned } = input;
  const where = source ? `ConfigMap ${source.namespace}/${source.name}` : 'ConfigMap';
  if (fetched.kind === 'off' || !source) {
    return localTrue(local, 'using local config: dynamic node configuration is off');
  }
  if (fetched.kind === 'absent') {
    return {
      ...localTrue(local, `using local config: ${where} does not exist`),
      ...(state || input.stateCorrupt ? { nextState: 'clear' as const } : {}),
    };
  }
  const readError = fetched.kind === 'error' ? `${where} could not be read (${fetched.message})` : undefined;
  if (assigned?.config.ok)
    return useAssigned(input, { ...assigned, config: assigned.config }, where, readError);
  return fallBack(input, where, readError);
}

/**
 * The assigned config loaded and validated: use it, starting its trial when
 * it is new, and make it the last-known-good once the trial period is over.
 */
function useAssigned(
  input: DecisionInput,
  assigned: Candidate & { config: Extract<AssignedConfig, { ok: true }> },
  where: string,
  readError: string | undefined,
): Decision {
  const { state } = input;
  const isNew = !sameRef(state?.current, assigned.ref);
  const since = isNew || !state?.current ? input.now : state.current.since;
  const lkg = sameRef(state?.lastKnownGood, assigned.ref) || input.now - since >= input.trialMs;
  const next: CheckpointState = {
    version: (state?.version ?? 0) + 1,
    current: { ...assigned.ref, since },
    ...(lkg
      ? { lastKnownGood: { ...assigned.ref } }
      : state?.lastKnownGood
        ? { lastKnownGood: state.lastKnownGood }
        : {}),
  };
  const changed = isNew || !sameRef(state?.lastKnownGood, next.lastKnownGood);
  const trial = lkg ? 'last-known-good' : `on trial until ${new Date(since + input.trialMs).toISOString()}`;
  return {
    settings: assigned.config.settings,
    using: 'assigned',
    ref: assigned.ref,
    condition: {
      type: CONFIG_OK,
      status: 'True',
      reason: 'AssignedConfig',
      message: truncate(
        `using assigned config: ${where} ${describeRef(assigned.ref)} (${trial})${
          readError ? `; ${readError}, using its checkpoint` : ''
        }`,
      ),
    },
    ...(isNew && !assigned.fromCheckpoint
      ? { checkpoint: { ref: assigned.ref, document: assigned.config.document } }
      : {}),
    ...(changed ? { nextState: next } : {}),
  };
}

/**
 * The assigned config is not usable (unreadable, rejected, its checkpoint
 * corrupt): say why, and fall back to the last-known-good, or to the local
 * config when there is none that loads.
 */
function fallBack(input: DecisionInput, where: string, readError: string | undefined): Decision {
  const { assigned, local } = input;
  let reason: string;
  let why: string;
  if (assigned && !assigned.config.ok) {
    reason = assigned.fromCheckpoint ? 'CheckpointCorrupt' : 'AssignedConfigRejected';
    why = assigned.fromCheckpoint
      ? `${where}: ${assigned.config.reason}`
      : `assigned config ${where} ${describeRef(assigned.ref)} rejected: ${assigned.config.reason}`;
  } else {
    reason = 'AssignedConfigUnavailable';
    why = readError ?? `${where} could not be read`;
  }
  if (input.stateCorrupt) why += `; ${input.stateCorrupt}`;
  const lkg = input.lastKnownGood;
  if (lkg?.config.ok && !(assigned && sameRef(lkg.ref, assigned.ref))) {
    return {
      settings: lkg.config.settings,
      using: 'last-known-good',
      ref: lkg.ref,
      condition: {
        type: CONFIG_OK,
        status: 'False',
        reason,
        message: truncate(`${why}; using last-known-good: ${where} ${describeRef(lkg.ref)}`),
      },
      rejection: why,
    };
  }
  if (lkg && !lkg.config.ok && !(assigned && sameRef(lkg.ref, assigned.ref))) {
    why += `; last-known-good ${lkg.config.reason}`;
  }
  return {
    settings: local,
    using: 'local',
    condition: { type: CONFIG_OK, status: 'False', reason, message: truncate(`${why}; using local config`) },
    rejection: why,
  };
}

function localTrue(local: NodeSettings, message: string): Decision {
  return {
    settings: local,
    using: 'local',
    condition: { type: CONFIG_OK, status: 'True', reason: 'LocalConfig', message },
  };
}

// Condition messages are shown by kubectl describe; keep them readable.
function truncate(message: string, max = 1024): string {
  return message.length <= max ? message : `${message.slice(0, max - 1)}…`;
}
