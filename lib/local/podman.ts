/**
 * A local Podman service for tests and local runs: Podman's Docker-compatible
 * API on a unix socket, with everything of its own (configuration, storage,
 * images, network definitions, logs) under one directory, a bridge network
 * of its own, and busybox images imported offline. `stop()` removes its
 * containers, volumes and network, stops the service, deletes its storage,
 * and removes the host state netavark added once nothing uses it.
 *
 * Layout of `dir` (replaced on every start): see podman-config.ts.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { importBusyboxImages, podmanImporter } from './busybox-image.ts';
import { importNodeImage } from './node-image.ts';
import {
  containersConf,
  type PodmanLayout,
  podmanEnv,
  podmanLayout,
  registriesConf,
  storageConf,
} from './podman-config.ts';
import {
  claimSlot,
  cleanHost,
  type HostSnapshot,
  type PodmanSlot,
  releaseSlot,
  snapshotHost,
  staleSlots,
} from './podman-host.ts';

const execFileAsync = promisify(execFile);
/** Makes the service die with us even when we are SIGKILLed (util-linux; skipped when absent). */
const SETPRIV = '/usr/bin/setpriv';
const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 10_000;

export interface StartPodmanOptions {
  /** The instance's directory; created, and replaced on each start. */
  dir: string;
  log?: (line: string) => void;
  /** The environment podman runs with (PATH); default this process's. */
  env?: NodeJS.ProcessEnv;
  /**
   * Registries (`host:port`) reached over plain HTTP, such as a test
   * registry on 127.0.0.1 (written to the instance's registries.conf).
   */
  insecureRegistries?: readonly string[];
}

/** A running local Podman service. */
export interface PodmanService {
  /** The unix socket serving the Docker Engine API. */
  socketPath: string;
  /** `unix://<socketPath>`, as DOCKER_HOST or SVK_DOCKER_HOST take it. */
  dockerHost: string;
  /** The bridge network of this instance, for the Docker provider's SVK_DOCKER_NETWORK. */
  network: string;
  subnet: string;
  dir: string;
  /** The environment a `podman` command needs to address this instance. */
  env: NodeJS.ProcessEnv;
  /** The service's process id (for memory figures). */
  servicePid: number;
  /** Removes everything the instance created and stops it. Idempotent. */
  stop(): Promise<void>;
}

export async function startPodman(options: StartPodmanOptions): Promise<PodmanService> {
  const log = options.log ?? (() => {});
  const baseEnv = options.env ?? process.env;
  await reapStale(baseEnv, log);
  const layout = podmanLayout(options.dir);
  rmSync(layout.dir, { recursive: true, force: true });
  rmSync(layout.runroot, { recursive: true, force: true });
  mkdirSync(layout.tmp, { recursive: true });
  mkdirSync(layout.networks, { recursive: true });
  // Before the first podman call on this storage: see podman-config.ts.
  writeFileSync(layout.containersConf, containersConf(layout));
  writeFileSync(layout.storageConf, storageConf(layout));
  writeFileSync(layout.registriesConf, registriesConf(options.insecureRegistries));
  const env = podmanEnv(layout, baseEnv);
  const host = snapshotHost();
  const slot = await claimSlot(layout.dir);
  let child: ChildProcess | undefined;
  let stopping = false;
  const stop = once(() => stopInstance({ layout, env, slot, host, child, log }));
  try {
    const started = Date.now();
    await importBusyboxImages(layout.dir, podmanImporter(env));
    await importNodeImage(podmanImporter(env));
    child = spawnService(layout, env);
    child.on('exit', (code, signal) => {
      if (!stopping) log(`podman service exited unexpectedly (${signal ?? code}); see ${layout.serviceLog}`);
    });
    await waitReady(layout.socket, child);
    await createNetwork(layout.socket, slot);
    log(`podman ready in ${((Date.now() - started) / 1000).toFixed(1)}s on ${layout.socket}`);
  } catch (err) {
    stopping = true;
    await stop();
    throw err;
  }
  return {
    socketPath: layout.socket,
    dockerHost: `unix://${layout.socket}`,
    network: slot.network,
    subnet: slot.subnet,
    dir: layout.dir,
    env,
    servicePid: child?.pid ?? 0,
    stop: () => {
      stopping = true;
      return stop();
    },
  };
}

function spawnService(layout: PodmanLayout, env: NodeJS.ProcessEnv): ChildProcess {
  const out = openSync(layout.serviceLog, 'a');
  const args = ['system', 'service', '--time=0', `unix://${layout.socket}`];
  const [cmd, argv] = existsSync(SETPRIV)
    ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', 'podman', ...args]]
    : ['podman', args];
  const child = spawn(cmd, argv, { env, stdio: ['ignore', out, out] });
  closeSync(out);
  writeFileSync(`${layout.dir}/service.pid`, String(child.pid ?? ''));
  return child;
}

async function waitReady(socketPath: string, child: ChildProcess): Promise<void> {
  const docker = new Docker({ socketPath });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
    if (child.exitCode !== null)
      throw new Error(`podman service exited with ${child.exitCode} before it was ready`);
    try {
      await docker.ping();
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`podman service not ready after ${READY_TIMEOUT_MS} ms`, { cause: err });
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** A bridge network on the slot's subnet and interface: Podman's CLI cannot name the interface, its compat API can. */
async function createNetwork(socketPath: string, slot: PodmanSlot): Promise<void> {
  await new Docker({ socketPath }).createNetwork({
    Name: slot.network,
    Driver: 'bridge',
    IPAM: { Driver: 'default', Config: [{ Subnet: slot.subnet }] },
    Options: { 'com.docker.network.bridge.name': slot.bridge },
  });
}

interface Instance {
  layout: PodmanLayout;
  env: NodeJS.ProcessEnv;
  slot: PodmanSlot;
  host?: HostSnapshot;
  child?: ChildProcess | undefined;
  log: (line: string) => void;
}

async function stopInstance(instance: Instance): Promise<void> {
  const { layout, env, slot, child, log } = instance;
  const podman = (args: string[]) =>
    execFileAsync('podman', args, { env, timeout: 120_000 }).catch((err: unknown) => {
      log(`podman ${args.join(' ')}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    });
  if (existsSync(layout.storageConf)) {
    await podman(['rm', '--all', '--force', '--time', '0']);
    await podman(['pod', 'rm', '--all', '--force']);
    await podman(['volume', 'rm', '--all', '--force']);
    await podman(['network', 'rm', '--force', slot.network]);
  }
  if (child) await stopChild(child);
  if (existsSync(layout.storageConf)) await podman(['system', 'reset', '--force']);
  rmSync(layout.dir, { recursive: true, force: true });
  rmSync(layout.runroot, { recursive: true, force: true });
  releaseSlot(slot);
  await cleanHost(instance.host ?? snapshotHost(), log);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/** Cleans up after instances whose owner died (SIGKILL, a crashed run): their containers would otherwise run on. */
async function reapStale(baseEnv: NodeJS.ProcessEnv, log: (line: string) => void): Promise<void> {
  for (const { slot, dir } of staleSlots('podman')) {
    log(`podman: cleaning up after a dead instance in ${dir}`);
    const layout = podmanLayout(dir);
    // The host snapshot of a dead instance is unknown: what it added stays unless nothing uses it.
    await stopInstance({ layout, env: podmanEnv(layout, baseEnv), slot, log });
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= fn();
    return running;
  };
}
