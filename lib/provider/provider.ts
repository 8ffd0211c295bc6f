import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { ContainerStreams } from './container-streams.ts';

/**
 * The provider boundary: what a backend (the mock, a container runtime, a
 * cloud service) implements so that virtual nodes and their pods run on it:
 * a node part (ping, node status) and a pod part (the pods' lifecycle).
 */

/** A node condition as the provider sees it; the node controller adds the timestamps. */
export interface ProviderNodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** What the provider reports about one virtual node. Returned objects must not be mutated. */
export interface ProviderNodeStatus {
  capacity: Readonly<Record<string, string>>;
  /** Defaults to capacity. */
  allocatable?: Readonly<Record<string, string>>;
  /**
   * Ready and the pressure conditions. Conditions the provider stops reporting
   * are removed from the Node; conditions written by other actors are kept.
   */
  conditions: readonly ProviderNodeCondition[];
  /** Free-form versions shown in `kubectl get nodes -o wide`. */
  nodeInfo: { kubeletVersion: string; operatingSystem: string; architecture: string; osImage: string };
}

/** The node part of a provider. */
export interface NodeProvider {
  /** The provider's name, used in the default taint `virtual-kubelet.io/provider=<name>:NoSchedule`. */
  readonly name: string;
  /**
   * Checks that the backend can run pods for `nodeName`. Rejects (with a
   * message saying why) when it cannot; the node then turns Ready=False with
   * reason ProviderPingFailed. Called every ping interval; must be cheap.
   */
  ping(nodeName: string, signal?: AbortSignal): Promise<void>;
  /** The node's capacity, conditions and info. Called every ping interval; a change is written at once. */
  nodeStatus(nodeName: string, signal?: AbortSignal): Promise<ProviderNodeStatus>;
  /**
   * Optional: the provider options in the node settings in use (local or
   * assigned config) changed. Called by the heartbeat before every round;
   * later nodeStatus calls report accordingly. Must be cheap.
   */
  configure?(options: ProviderNodeOptions): void;
}

/** The part of the node settings a provider reads. */
export interface ProviderNodeOptions {
  /** Capacity (and allocatable) to report for every node. */
  capacity: Readonly<Record<string, string>>;
}

/** The provider does not have this pod. Callers treat it as "already gone" where that is the goal. */
export class ProviderNotFoundError extends Error {
  override readonly name = 'ProviderNotFoundError';
}

export function isProviderNotFound(err: unknown): err is ProviderNotFoundError {
  return err instanceof ProviderNotFoundError;
}

/**
 * The provider cannot run this pod as its spec asks (a field it does not
 * support, e.g. a hostPath volume): it ran nothing, and a retry of the same
 * spec fails the same way. The message names every reason.
 */
export class ProviderUnsupportedError extends Error {
  override readonly name = 'ProviderUnsupportedError';
  constructor(
    /** One line per unsupported field, naming it. */
    readonly reasons: readonly string[],
    provider: string,
  ) {
    super(`the ${provider} provider cannot run this pod: ${reasons.join('; ')}`);
  }
}

export function isProviderUnsupported(err: unknown): err is ProviderUnsupportedError {
  return err instanceof ProviderUnsupportedError;
}

/**
 * The provider cannot start the pod yet, as the kubelet cannot mount a
 * volume whose ConfigMap or Secret does not exist: it ran and wrote
 * nothing, and the same pod is to be tried again later (the pod stays
 * Pending). `reason` and the message are the kubelet's Event's
 * (`FailedMount`, `MountVolume.SetUp failed for volume "v" : configmap "x"
 * not found`); they name objects, never data.
 */
export class ProviderWaitingError extends Error {
  override readonly name = 'ProviderWaitingError';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export function isProviderWaiting(err: unknown): err is ProviderWaitingError {
  return err instanceof ProviderWaitingError;
}

/**
 * The pod part of a provider: what virtual-kubelet's PodLifecycleHandler is.
 * Every call may run in a different Lambda invocation, concurrently with
 * others, and be retried: implementations keep their state outside the
 * process and make every call safe to repeat.
 *
 * Pods passed in are full Kubernetes Pods as read from the API server, with
 * env from ConfigMaps, Secrets and the downward API already resolved: every
 * variable has its `value`, no container has `envFrom`, and a variable that
 * came from a reference keeps it in `valueFrom` beside the value (a
 * `secretKeyRef` value must be kept secret; a `fieldRef` value is specific to
 * this pod; see lib/pod/env/pod-env.ts), the service-link variables
 * included. `command` and `args` are as written: a provider expands their
 * `$(VAR)` references from that env with container-command.ts where it
 * builds what runs. Returned objects must not be mutated by callers.
 */
export interface PodProvider {
  /**
   * Starts the pod. Idempotent: creating a pod the provider already has with
   * the same uid succeeds and starts nothing twice. A different uid under the
   * same namespace/name means a new pod: the old one is replaced.
   *
   * Resolves with the pod's status when the provider can report it at once
   * (see {@link AppliedPodStatus}), else with undefined. Rejects with
   * {@link ProviderWaitingError} when the pod cannot start yet (a missing
   * ConfigMap or Secret of a volume): its Event is recorded, the pod stays
   * Pending and the create is tried again.
   */
  createPod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus>;
  /**
   * Applies a changed spec/metadata to a pod the provider has.
   * ProviderNotFoundError when it has none. Resolves like createPod.
   */
  updatePod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus>;
  /**
   * Stops and removes the pod. May be called many times for the same pod;
   * ProviderNotFoundError when the provider does not have it (callers treat
   * that as done). Only deletes when the uid matches, so a new pod with the
   * same name is never hit by a late delete of the old one.
   *
   * Resolves with `stopped` when the provider can tell at once that the
   * pod's processes have ended and it no longer has the pod (see
   * {@link DeletedPodStatus}), else with nothing.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a provider whose deletePod resolves with nothing (Promise<void>) stays a provider.
  deletePod(pod: V1Pod, signal?: AbortSignal): Promise<DeletedPodStatus | void>;
  /** The pod as the provider runs it (its status current), or undefined. */
  getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod | undefined>;
  /** Every pod the provider runs on `nodeName`, statuses current. */
  listPods(nodeName: string, signal?: AbortSignal): Promise<V1Pod[]>;
  /**
   * Optional: the log of one container of a pod the provider runs, as the
   * kubelet's `/containerLogs` serves it (`kubectl logs`). Without it the
   * kubelet API answers logs requests with 501.
   *
   * Resolves with the log's bytes: lines as the container wrote them, each
   * ending in `\n`, prefixed with the line's RFC 3339 timestamp (nine
   * fractional digits, UTC) and a space when `options.timestamps`. The
   * options apply as the kubelet applies them (its `ReadLogs`): `tailLines`
   * picks the last lines of the whole log, `since` then drops older lines,
   * `limitBytes` cuts the stream. With `options.follow` the stream stays open
   * and yields lines as they are written until the container stops or
   * `signal` aborts (the caller bounds a follow by aborting); otherwise it ends
   * with the last line written so far. The caller checks, before calling,
   * that the pod is bound to one of its nodes, has this container, and that
   * the container has started.
   *
   * @throws ProviderNotFoundError when the provider has no such pod (by uid)
   *   or container, or, with `options.previous`, no previous instance of it.
   */
  containerLogs?(
    pod: V1Pod,
    container: string,
    options: ContainerLogOptions,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>>;
  /**
   * Optional: resource usage of every pod the provider runs on `nodeName`
   * (the kubelet's `/stats/summary` and `/metrics/resource`, which `kubectl
   * top` and metrics-server read). Without it those endpoints report the
   * node with no pods. A pod or a container the provider has no figures for
   * is left out, never reported as zero; the node's figures are the sums.
   */
  podStats?(nodeName: string, signal?: AbortSignal): Promise<PodUsage[]>;
  /**
   * Optional: the backend's own notice that something changed on `nodeName`
   * (a container started, exited or was removed), as virtual-kubelet's
   * PodNotifier lets a provider push instead of only being polled. A change
   * says only that a pod status on the node may have moved: pod-status then
   * runs its next round at once instead of at the end of its interval, and
   * reads every status from `listPods` as a poll does. Without it, or while
   * its stream is down, pod-status polls alone.
   *
   * Yields one {@link ProviderChange} per change the backend reports (a burst
   * may yield many; the caller coalesces them). The iteration ends when
   * `signal` aborts, and must not outlive it (the caller never awaits the
   * end); it throws when the stream cannot be opened or breaks, the backend
   * closing it included, and the caller opens it again later. Changes made
   * before the stream opened, or while it was down, are not replayed: the
   * caller's polling covers them.
   */
  watchChanges?(nodeName: string, signal: AbortSignal): AsyncIterable<ProviderChange>;
  /**
   * Optional: exec, attach and port-forward into the provider's pods (the
   * kubelet API's streaming endpoints; see container-streams.ts). Without
   * it those endpoints answer 501.
   */
  readonly streams?: ContainerStreams;
}

/**
 * Records a Kubernetes Event on a pod, as the kubelet's event recorder does
 * for what it observes itself (a failed probe, a container it kills): given
 * to a provider that runs such things (ProviderContext.events). Best
 * effort: it never rejects, and recording the same event again updates it.
 */
export interface ProviderEventRecorder {
  record(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

/** One change a provider's {@link PodProvider.watchChanges} reports: a hint to look again, never a status. */
export interface ProviderChange {
  /** The pod it concerns, when the backend says. */
  uid?: string;
  /** What happened, in the backend's words (`die`, `start`...), for logs. */
  reason: string;
}

/** Which part of a container's log to read: the kubelet's `/containerLogs` query, parsed and validated. */
export interface ContainerLogOptions {
  /** Only the last N lines of the log (N >= 0), before `since` and `limitBytes` apply. */
  tailLines?: number;
  /** Only lines written at or after this time (`sinceSeconds` and `sinceTime` both become this). */
  since?: Date;
  /** Prefix each line with its RFC 3339 timestamp (nine fractional digits, UTC) and a space. */
  timestamps?: boolean;
  /** End the stream once this many bytes (> 0) were yielded (a line may be cut). */
  limitBytes?: number;
  /** The log of the container's previous, terminated instance (after a restart). */
  previous?: boolean;
  /** Keep the stream open and yield lines as they are written, until the signal aborts. */
  follow?: boolean;
}

/** One sample of a container's usage, as the kubelet's stats summary reports it. */
export interface ContainerUsage {
  name: string;
  /** When the container (this instance) started. */
  startTime?: Date;
  /** When the figures were sampled. */
  time: Date;
  cpu?: {
    /** Average usage over the last sampling window, in nanocores (1e9 = one core). */
    usageNanoCores?: number;
    /** Cumulative CPU time since the container started, in core-nanoseconds. */
    usageCoreNanoSeconds?: number;
  };
  memory?: {
    usageBytes?: number;
    /** What the OOM killer and eviction look at; metrics-server reads this. */
    workingSetBytes?: number;
    rssBytes?: number;
  };
}

/** The usage of one pod: its containers' samples. Pod totals are their sums. */
export interface PodUsage {
  namespace: string;
  name: string;
  uid: string;
  startTime?: Date;
  containers: ContainerUsage[];
}

/**
 * Status at once, an optional capability of createPod and updatePod: pod
 * statuses are polled by pod-status, or pushed by a provider that can, much
 * as virtual-kubelet's PodNotifier lets a provider push instead of being
 * polled (node/podcontroller.go). A provider that knows a pod's status as soon as the call returns
 * resolves with it; pod-sync then writes it to the pod's status subresource
 * itself right after recording the create, and pod-status finds it already
 * written. A provider whose pods start asynchronously (a real backend that
 * reports Pending for a while) resolves with undefined and is polled by
 * pod-status alone.
 *
 * The status returned must be exactly what getPod and listPods would report
 * for this uid at that moment (same fields, same timestamps), or pod-status
 * sees a change and writes the status a second time. It is written as the
 * poller would write it: merged with the conditions of other actors, never
 * over a Succeeded or Failed status.
 */
export type AppliedPodStatus = V1PodStatus | undefined;

/**
 * Status at once for a delete, an optional capability of deletePod: `stopped`
 * says that the pod's processes have ended and that getPod and listPods no
 * longer report it, which pod-status would only find at its next poll. Then
 * pod-sync writes the pod's terminated status itself with the delete and
 * then force-deletes the pod, in the same reconcile; nothing is left to
 * pod-status's poll. A provider whose pods stop later (a grace period, an
 * asynchronous backend) resolves with nothing, and pod-status reports the
 * pod terminated once it finds it gone.
 */
export type DeletedPodStatus = 'stopped' | undefined;
