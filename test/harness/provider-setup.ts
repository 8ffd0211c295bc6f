import type { V1Pod } from '@kubernetes/client-node';
import type { LocalDeployment } from '../../lib/local/local-deployment.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';

/**
 * What a provider brings to the pipeline harness: how the functions are
 * configured to use it, the image its pods run, a probe that reads the
 * provider's own state, and the scenarios it cannot express. The conformance
 * suite and the fault bench run every provider through this one interface.
 */

/** One pod by identity. */
export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** A pod as the provider itself holds it, read from its own state (records, engine, tasks), not through the pipeline. */
export interface ProbedPod extends PodRef {
  node: string;
  /** Some process of the pod still runs (also while it is being stopped). */
  running: boolean;
}

/** What the provider did to one pod uid, from its own side. */
export interface ProbedHistory {
  /** How many times the provider started this uid. More than 1 means it was created twice. */
  creates: number;
  /** How many deletes (stops) of this uid it accepted. */
  deletes: number;
  /** Some process of the pod still runs (also while it is being stopped). */
  running: boolean;
}

/**
 * Reads the provider's own view, for assertions and the fault bench's "lost"
 * and "created twice" counts. Each provider measures these from its own
 * state: the mock from its records' counters, docker from the engine's
 * containers and their labels, ECS from its tasks.
 */
export interface ProviderProbe {
  /** Every pod the provider holds for `node`, running or being stopped. */
  pods(node: string): Promise<ProbedPod[]>;
  /** The provider's history of this uid, or undefined when it has no trace of it. */
  history(ref: PodRef): Promise<ProbedHistory | undefined>;
  /**
   * Puts a pod straight into the provider, behind the pipeline's back: a
   * dangling pod (on one of our nodes, a uid the API server never had).
   */
  injectPod(pod: V1Pod): Promise<void>;
  /** Removes whatever the provider still holds for these nodes (after a failed run). Best effort. */
  purge?(nodes: readonly string[]): Promise<void>;
  /** Releases what the probe holds open (an event stream). */
  close?(): Promise<void>;
  /**
   * When the provider began the pod's preStop hook on its delete, and when
   * its containers got the stop signal (epoch ms), as far as it has them
   * yet: the prestop scenario's evidence, from the provider's own side.
   */
  hooks?(ref: PodRef): Promise<{ preStopAt?: number; stopSignalAt?: number } | undefined>;
  /**
   * For a provider whose backend runs no processes (a simulation): the
   * files of the pod's file volume `volume` as its backend wrote them for
   * its newest start (path → content and mode), or undefined when it wrote
   * none. The volume scenarios check the files through it instead of from
   * inside the pod.
   */
  volumeFiles?(
    ref: PodRef,
    volume: string,
  ): Promise<Map<string, { content: Buffer; mode: number }> | undefined>;
  /** Everything the provider sent its backend and the backend logged, as text, for scans (a simulation's requests). */
  backendText?(): Promise<string>;
}

/** What a probe can use: the deployment's state table and its function environment. */
export interface ProbeContext {
  table: StateTable;
  env: Readonly<Record<string, string>>;
}

/** Conformance scenarios, by id, for {@link ProviderSetup.notApplicable}. */
export type ScenarioId =
  | 'create-running'
  | 'exit-codes'
  | 'job'
  | 'crash-loop'
  | 'graceful-delete'
  | 'force-delete'
  | 'recreate'
  | 'init-containers'
  | 'init-containers-files'
  | 'localhost'
  | 'env'
  | 'dangling'
  | 'restart-mid-burst'
  | 'readiness-endpoints'
  | 'readiness-gate'
  | 'liveness-restart'
  | 'startup-probe'
  | 'prestop'
  | 'termination-message'
  | 'command-expansion'
  | 'active-deadline'
  | 'file-volumes'
  | 'volume-update'
  | 'volume-missing-source'
  | 'pod-extras'
  | 'projected-token'
  | 'projected-token-refresh';

export interface ProviderSetup {
  /** `SVK_PROVIDER` of the functions. */
  name: string;
  /** The image of every pod the scenarios create; it must provide busybox's `sh`, `sleep`, `test`, `httpd` and `wget`. */
  image: string;
  /** Starts what the provider needs (an engine, a simulation). Called once, before the deployment starts. */
  start?(): Promise<void>;
  /**
   * How long the backend itself may take to stop a process that ignores
   * SIGTERM once told to stop at once (a force delete), when it cannot be
   * told to kill it sooner: ECS sends SIGKILL only after the stopTimeout of
   * the task's definition (the pod's grace period, at most 120 s on Fargate).
   * Default 0.
   */
  forcedStopSeconds?: number;
  /**
   * Called once the deployment exists, before it starts: for a provider whose
   * backend pushes events into the deployment (ECS's task-state events onto
   * the account's default bus, `deployment.awsBus`).
   */
  connect?(deployment: LocalDeployment): void;
  /** Stops what {@link start} started. Called once, after the deployment stopped. */
  stop?(): Promise<void>;
  /** Function environment for this provider (`SVK_PROVIDER` is set by the harness). */
  env?(nodes: readonly string[]): Record<string, string>;
  probe(context: ProbeContext): ProviderProbe;
  /**
   * Scenarios this provider cannot express, each with the reason (reported
   * as skipped with it, never as passed). Everything else must pass.
   */
  notApplicable?: Partial<Record<ScenarioId, string>>;
}
