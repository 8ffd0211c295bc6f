import type { ProbeKind, ProbeResult } from '../../probe-worker.ts';

/**
 * The document the prober (prober-agent.ts, in its container on the engine
 * host) keeps for the provider: one JSON file in the prober container,
 * rewritten whole (a write to a temporary file, then a rename) whenever a
 * result changes and every few seconds besides. The provider reads it with
 * one archive GET per node per status round (prober-container.ts), so
 * probing costs the functions one request per node whatever the number of
 * probed pods. The prober reads it back when it restarts, so a hook that ran
 * is never run twice for the same instance.
 */

/** Where the document lives in the prober container. */
export const REPORT_DIR = '/var/lib/svk-prober';
export const REPORT_PATH = `${REPORT_DIR}/report.json`;
/** The format's version: a provider skips a document of another. */
export const REPORT_VERSION = 1;

/** A hook's progress on one instance. */
export interface HookReport {
  state: 'running' | 'done' | 'failed';
  /** When it started (epoch ms). */
  startedAt: number;
  /** When it last changed state: its start, then its end. */
  at: number;
}

/** One probe worker's result, as the kubelet's results manager holds it. */
export interface ProbeReport {
  result: ProbeResult;
  /** When the result last changed. */
  since: number;
}

/** What the prober knows of one instance of an app container. */
export interface InstanceReport {
  uid: string;
  container: string;
  probes: Partial<Record<ProbeKind, ProbeReport>>;
  postStart?: HookReport;
  preStop?: HookReport;
  /** The prober stopped it: a failed liveness or startup probe, or a failed postStart hook. */
  killed?: { reason: string; at: number };
}

/** A Kubernetes Event the prober asks the provider to record on a pod. */
export interface ReportedEvent {
  /** Increases with every event the prober reports, per boot. */
  seq: number;
  /** When it last happened (epoch ms). */
  at: number;
  namespace: string;
  name: string;
  uid: string;
  node: string;
  container: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface ProberReport {
  version: number;
  /** A fresh id each time the prober process starts: event sequence numbers count within it. */
  boot: string;
  /** The script the prober runs (its hash): a provider replaces a prober that runs another. */
  script: string;
  /** When the document was written (epoch ms): a provider takes an old one for a prober that stopped. */
  writtenAt: number;
  /** By instance (engine container id). */
  instances: Record<string, InstanceReport>;
  /** The newest events, oldest first, at most a few minutes' worth. */
  events: ReportedEvent[];
}
