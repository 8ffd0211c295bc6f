import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import * as z from 'zod';
import { doublingDelayMs } from '../../../util/doubling-delay.ts';
import { readContainerFile } from '../engine-archive.ts';
import { isEngineNotFound, isNameConflict, isNotModified, isStartUnderWay } from '../engine-errors.ts';
import { LABELS } from '../names.ts';
import { type ProberReport, REPORT_DIR, REPORT_PATH, REPORT_VERSION } from './prober-report.ts';
import { PROBER_SCRIPT } from './prober-script.generated.ts';

/**
 * The prober container of a virtual node on the engine (prober-agent.ts
 * is what it runs): `svk_prober_<node>`, from SVK_DOCKER_PROBER_IMAGE,
 * running the bundled script with that image's `node`, on the pods'
 * network (it reaches every pod IP, as a kubelet reaches its pods), with
 * the engine's socket mounted (it runs exec probes and hooks through the
 * engine, in the pod's container, as the kubelet does through the CRI).
 *
 * The provider keeps it: created when a pod of the node needs it, started
 * again when it stopped, replaced when it runs another script than this
 * release's, removed when no pod of the node needs it any more. Its report
 * is read with one archive GET per status round.
 */

/** Where the engine's socket is inside the prober container. */
const SOCKET_IN_PROBER = '/run/svk-engine.sock';
/** Starts tried while a concurrent create holds the name, a pause doubling from 20 ms to 1 s between them. */
const START_ATTEMPTS = 10;
const START_RETRY_MS = 20;
const START_RETRY_MAX_MS = 1_000;
/** A report older than this says the prober stopped writing: it is restarted. */
export const STALE_REPORT_MS = 30_000;

/** The hash of the script this release's prober runs. */
export const PROBER_SCRIPT_HASH = createHash('sha256').update(PROBER_SCRIPT).digest('hex').slice(0, 16);

export function proberName(node: string): string {
  return `svk_prober_${node}`;
}

/** The volume that keeps the prober's report across restarts and replacements of its container. */
export function proberVolumeName(node: string): string {
  return `svk_prober_${node}`;
}

export interface ProberSettings {
  network: string;
  proberImage: string;
  engineSocket: string;
}

export function proberConfig(node: string, settings: ProberSettings): Docker.ContainerCreateOptions {
  return {
    name: proberName(node),
    Image: settings.proberImage,
    Entrypoint: ['node'],
    Cmd: ['--input-type=module', '--max-old-space-size=96', '-e', PROBER_SCRIPT],
    Env: [
      `SVK_PROBER_NODE=${node}`,
      `SVK_PROBER_NETWORK=${settings.network}`,
      `SVK_PROBER_SOCKET=${SOCKET_IN_PROBER}`,
      `SVK_PROBER_SCRIPT=${PROBER_SCRIPT_HASH}`,
    ],
    Labels: { [LABELS.node]: node, [LABELS.role]: 'prober', [LABELS.proberScript]: PROBER_SCRIPT_HASH },
    HostConfig: {
      Init: true,
      NetworkMode: settings.network,
      RestartPolicy: { Name: 'no' },
      Binds: [`${settings.engineSocket}:${SOCKET_IN_PROBER}`, `${proberVolumeName(node)}:${REPORT_DIR}`],
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Memory: 256 * 1024 * 1024,
    },
  };
}

/** The prober as the node's container list shows it. */
export interface ProberSummary {
  id: string;
  state: string;
  script?: string;
}

export function proberOf(listed: readonly Docker.ContainerInfo[]): ProberSummary | undefined {
  const c = listed.find((s) => s.Labels?.[LABELS.role] === 'prober');
  if (!c) return undefined;
  const script = c.Labels?.[LABELS.proberScript];
  return { id: c.Id, state: c.State, ...(script ? { script } : {}) };
}

/**
 * Brings the node's prober to running this release's script: creates it
 * (after pulling its image), starts it when it stopped, replaces one of
 * another release. Safe to run from several invocations at once: the
 * name is unique, a start of a running container is a no-op.
 */
export async function ensureProber(
  docker: Docker,
  node: string,
  settings: ProberSettings,
  current: ProberSummary | undefined,
  ports: { pullImage: (image: string) => Promise<void>; sleep: (ms: number) => Promise<void> },
): Promise<'running' | 'started' | 'created'> {
  if (current && current.script !== PROBER_SCRIPT_HASH) {
    await removeProber(docker, current.id);
    current = undefined;
  }
  if (current?.state === 'running') return 'running';
  if (!current) {
    await ports.pullImage(settings.proberImage);
    try {
      await docker.createVolume({ Name: proberVolumeName(node), Labels: { [LABELS.node]: node } });
    } catch (err) {
      if (!isNameConflict(err)) throw err;
    }
  }
  // Concurrent creates race for the name as the infra container's do (docker-pods.ts, createInfra): the
  // loser's start may not find the winner's container yet, so it is tried again after a pause.
  for (let attempt = 1; ; attempt++) {
    if (!current) {
      try {
        await docker.createContainer(proberConfig(node, settings));
      } catch (err) {
        if (!isNameConflict(err)) throw err;
      }
    }
    try {
      await docker.getContainer(proberName(node)).start();
      return current ? 'started' : 'created';
    } catch (err) {
      if (isNotModified(err)) return 'running';
      if (!(isEngineNotFound(err) || isStartUnderWay(err)) || attempt >= START_ATTEMPTS) throw err;
    }
    await ports.sleep(doublingDelayMs(attempt, START_RETRY_MS, START_RETRY_MAX_MS));
  }
}

/**
 * Removes the prober container; with `node`, its report's volume too (no pod of the node needs a
 * prober any more), else the volume stays for the next container to read.
 */
export async function removeProber(docker: Docker, id: string, node?: string): Promise<void> {
  try {
    await docker.getContainer(id).remove({ force: true });
  } catch (err) {
    if (!isEngineNotFound(err)) throw err;
  }
  if (node === undefined) return;
  try {
    await docker.getVolume(proberVolumeName(node)).remove();
  } catch (err) {
    if (!isEngineNotFound(err)) throw err;
  }
}

const hookSchema = z.object({
  state: z.enum(['running', 'done', 'failed']),
  startedAt: z.number(),
  at: z.number(),
});
const probeSchema = z.object({ result: z.enum(['success', 'failure', 'unknown']), since: z.number() });
const reportSchema = z.object({
  version: z.literal(REPORT_VERSION),
  boot: z.string(),
  script: z.string(),
  writtenAt: z.number(),
  instances: z.record(
    z.string(),
    z.object({
      uid: z.string(),
      container: z.string(),
      probes: z.object({
        readiness: probeSchema.optional(),
        liveness: probeSchema.optional(),
        startup: probeSchema.optional(),
      }),
      postStart: hookSchema.optional(),
      preStop: hookSchema.optional(),
      killed: z.object({ reason: z.string(), at: z.number() }).optional(),
    }),
  ),
  events: z.array(
    z.object({
      seq: z.number(),
      at: z.number(),
      namespace: z.string(),
      name: z.string(),
      uid: z.string(),
      node: z.string(),
      container: z.string(),
      type: z.enum(['Normal', 'Warning']),
      reason: z.string(),
      message: z.string(),
    }),
  ),
});

/**
 * The node's prober report: undefined when the prober container or its
 * report does not exist (yet), or the report is not one this release reads.
 */
export async function readProberReport(
  docker: Docker,
  node: string,
  signal?: AbortSignal,
): Promise<ProberReport | undefined> {
  const content = await readContainerFile(docker, proberName(node), REPORT_PATH, signal);
  if (content === undefined) return undefined;
  try {
    const parsed = reportSchema.safeParse(JSON.parse(content.toString('utf8')));
    return parsed.success ? (parsed.data satisfies ProberReport) : undefined;
  } catch {
    return undefined;
  }
}
