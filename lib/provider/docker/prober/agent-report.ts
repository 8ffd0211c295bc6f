import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  type InstanceReport,
  type ProberReport,
  REPORT_VERSION,
  type ReportedEvent,
} from './prober-report.ts';

/** The report is rewritten at least this often, so the provider can tell a prober that stopped. */
const HEARTBEAT_MS = 3_000;
/** Events older than this, or beyond this many, leave the report. */
const EVENT_TTL_MS = 10 * 60_000;
const MAX_EVENTS = 300;

/** Who an event is about. */
export interface EventSubject {
  namespace: string;
  name: string;
  uid: string;
  node: string;
  container: string;
}

/**
 * The prober's report file (prober-report.ts): what it knows of each
 * instance and the Events it asks the provider to record, written whole
 * through a rename so that a reader never sees half of it, and read back
 * when the prober starts again.
 */
export class AgentReport {
  readonly #boot = randomUUID();
  #events: ReportedEvent[] = [];
  #seq = 0;
  #dirty = true;
  #writtenAt = 0;
  /** What the last report of a previous prober process said of instances not seen again yet. */
  #restored: Record<string, InstanceReport> = {};

  constructor(
    private readonly path: string,
    private readonly script: string,
    private readonly now: () => number,
    private readonly log: (line: Record<string, unknown>) => void,
  ) {}

  /** Reads what a previous prober process reported: hooks already run, probe results. */
  restore(): void {
    try {
      const report = JSON.parse(readFileSync(this.path, 'utf8')) as ProberReport;
      if (report.version === REPORT_VERSION) this.#restored = report.instances ?? {};
    } catch {
      // No report yet (a new prober), or an unreadable one: start afresh.
    }
  }

  /** The previous process's report of an instance, handed over once. */
  takeRestored(id: string): InstanceReport | undefined {
    const restored = this.#restored[id];
    delete this.#restored[id];
    return restored;
  }

  /** Forgets restored instances that no longer exist. */
  keepRestored(ids: ReadonlySet<string>): void {
    this.#restored = Object.fromEntries(Object.entries(this.#restored).filter(([id]) => ids.has(id)));
  }

  changed(): void {
    this.#dirty = true;
  }

  /** Adds an event; the same event again (same pod, container, reason and message) moves to the end, newer. */
  event(subject: EventSubject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const now = this.now();
    const text = message.slice(0, 1024);
    const same = this.#events.findIndex(
      (e) =>
        e.uid === subject.uid &&
        e.container === subject.container &&
        e.reason === reason &&
        e.message === text,
    );
    if (same >= 0) this.#events.splice(same, 1);
    this.#events.push({ seq: ++this.#seq, at: now, ...subject, type, reason, message: text });
    this.#events = this.#events.filter((e) => now - e.at < EVENT_TTL_MS).slice(-MAX_EVENTS);
    this.#dirty = true;
  }

  /** Writes the report when something changed (`force`: at once), else once a heartbeat. */
  write(instances: Iterable<[string, InstanceReport]>, force: boolean): void {
    const now = this.now();
    if (!force && !this.#dirty && now - this.#writtenAt < HEARTBEAT_MS) return;
    const report: ProberReport = {
      version: REPORT_VERSION,
      boot: this.#boot,
      script: this.script,
      writtenAt: now,
      instances: { ...this.#restored, ...Object.fromEntries(instances) },
      events: this.#events,
    };
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      writeFileSync(`${this.path}.tmp`, JSON.stringify(report));
      renameSync(`${this.path}.tmp`, this.path);
      this.#dirty = false;
      this.#writtenAt = now;
    } catch (err) {
      this.log({ msg: 'could not write the report', err: String(err) });
    }
  }
}
