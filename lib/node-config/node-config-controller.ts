import type { Clock } from '../clock.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { apiErrorMessage } from '../kube/api-error-message.ts';
import { isNotFound } from '../kube/client.ts';
import type { CoreApi } from '../kube/core-api.ts';
import type { Logger } from '../log/logger.ts';
import type { StateTable } from '../state/dynamodb.ts';
import { errorMessage } from '../util/error-message.ts';
import { parseAssignedConfig, validateDocument } from './assigned-config.ts';
import {
  type ConfigRef,
  describeRef,
  type LoadedCheckpoint,
  NodeConfigCheckpointStore,
  sameRef,
} from './checkpoint-store.ts';
import {
  type Candidate,
  CONFIG_OK,
  type ConfigSource,
  type Decision,
  decide,
  type FetchedConfigMap,
} from './decision.ts';

export interface NodeConfigControllerOptions {
  /** The assigned config's ConfigMap; undefined turns dynamic configuration off. */
  source?: ConfigSource;
  /** The local config (defaults + environment), already validated. */
  local: NodeSettings;
  trialMs: number;
  core: CoreApi;
  table: StateTable;
  clock: Clock;
  log: Logger;
}

/**
 * Resolves which node settings to use, each time it is asked: reads the
 * ConfigMap and the checkpoint state, decides (decision.ts), and writes the
 * new checkpoint and state. Shared by all nodes of a deployment. Holds only
 * checkpoints it loaded (immutable per uid and resourceVersion) and its last
 * decision, so a fresh process starts from DynamoDB.
 */
export class NodeConfigController {
  private readonly store: NodeConfigCheckpointStore;
  private readonly loaded = new Map<string, LoadedCheckpoint>();
  private last: Decision | undefined;
  private lastLogged: string | undefined;

  constructor(private readonly options: NodeConfigControllerOptions) {
    this.store = new NodeConfigCheckpointStore(options.table);
  }

  /**
   * The settings to use now and the ConfigOK condition saying why. Never
   * throws: when DynamoDB fails, the previous decision stands (the local
   * config before there was one).
   */
  async resolve(): Promise<Decision> {
    try {
      const decision = await this.decideAndRecord();
      this.report(decision);
      this.last = decision;
      return decision;
    } catch (err) {
      this.options.log.warn({ err }, 'node config could not be resolved: keeping the config in use');
      return (
        this.last ?? {
          settings: this.options.local,
          using: 'local',
          condition: {
            type: CONFIG_OK,
            status: 'False',
            reason: 'AssignedConfigUnavailable',
            message: `node config could not be resolved (${errorMessage(err)}); using local config`,
          },
        }
      );
    }
  }

  private async decideAndRecord(): Promise<Decision> {
    const { source, local, clock, trialMs } = this.options;
    const now = clock.now();
    if (!source) return decide({ local, fetched: { kind: 'off' }, state: undefined, now, trialMs });
    const [fetched, read] = await Promise.all([this.fetch(source), this.store.readState()]);
    const { state } = read;
    let assigned: Candidate | undefined;
    if (fetched.kind === 'found') {
      assigned = sameRef(state?.current, fetched.ref)
        ? await this.fromCheckpoint(fetched.ref)
        : { ref: fetched.ref, config: parseAssignedConfig(local, fetched.data), fromCheckpoint: false };
    } else if (fetched.kind === 'error' && state?.current) {
      assigned = await this.fromCheckpoint(state.current);
    }
    const lkgRef = state?.lastKnownGood;
    const lastKnownGood =
      lkgRef && fetched.kind !== 'absent'
        ? assigned && sameRef(assigned.ref, lkgRef)
          ? assigned
          : await this.fromCheckpoint(lkgRef)
        : undefined;
    const decision = decide({
      source,
      local,
      fetched,
      state,
      ...(read.corrupt ? { stateCorrupt: read.corrupt } : {}),
      ...(assigned ? { assigned } : {}),
      ...(lastKnownGood ? { lastKnownGood } : {}),
      now,
      trialMs,
    });
    if (decision.checkpoint) {
      await this.store.writeCheckpoint(decision.checkpoint.ref, source, decision.checkpoint.document, now);
    }
    if (decision.nextState === 'clear') {
      await this.store.clearState();
      this.options.log.info({ configMap: source }, 'assigned node config removed: back to local config');
    } else if (decision.nextState) {
      const written = await this.store.writeState(decision.nextState, read.corrupt ? 'any' : state?.version);
      // Another invocation decided at the same time; it read the same inputs, and the next round re-reads.
      if (!written) this.options.log.info('node config state changed meanwhile: deciding again next round');
    }
    return decision;
  }

  private async fetch(source: ConfigSource): Promise<FetchedConfigMap> {
    try {
      const cm = await this.options.core.readNamespacedConfigMap({
        namespace: source.namespace,
        name: source.name,
      });
      const uid = cm.metadata?.uid;
      const resourceVersion = cm.metadata?.resourceVersion;
      if (!uid || !resourceVersion) return { kind: 'error', message: 'the API server returned no uid' };
      return { kind: 'found', ref: { uid, resourceVersion }, data: cm.data ?? {} };
    } catch (err) {
      if (isNotFound(err)) return { kind: 'absent' };
      return { kind: 'error', message: apiErrorMessage(err) };
    }
  }

  private async fromCheckpoint(ref: ConfigRef): Promise<Candidate> {
    const key = `${ref.uid}#${ref.resourceVersion}`;
    let loaded = this.loaded.get(key);
    if (!loaded) {
      loaded = await this.store.loadCheckpoint(ref);
      // Only good checkpoints are kept: a bad one is read (and reported) again.
      if (loaded.ok) this.loaded.set(key, loaded);
    }
    // Validated again on every use: the rules may have changed since it was written.
    const config = loaded.ok
      ? validateDocument(
          this.options.local,
          loaded.document,
          `checkpoint ${describeRef(ref)} is corrupt: its document`,
        )
      : loaded;
    return { ref, config, fromCheckpoint: true };
  }

  /** Logs a change of decision once, a rejection as an error. */
  private report(decision: Decision): void {
    const key = `${decision.condition.status}|${decision.condition.message}`;
    if (key === this.lastLogged) return;
    this.lastLogged = key;
    const fields = {
      using: decision.using,
      ...(decision.ref ? { config: decision.ref } : {}),
      configOK: decision.condition,
    };
    if (decision.rejection) this.options.log.error(fields, `node config not used: ${decision.rejection}`);
    else this.options.log.info(fields, `node config: ${decision.condition.message}`);
  }
}
