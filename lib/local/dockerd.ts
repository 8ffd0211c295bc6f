/**
 * A local Docker Engine for tests: Debian's dockerd (installed by
 * scripts/ensure-docker-engine.sh) with its own containerd, every path of
 * its own (data root, exec root, socket, pid file, configuration) under one
 * directory, a bridge network of its own, and the busybox images imported
 * offline. It changes nothing on the host that Podman or a system dockerd
 * would see: no iptables rules, no default bridge, no IP forwarding switch,
 * no /etc/docker/daemon.json. `stop()` removes its containers, volumes and
 * network, stops the daemon and deletes its directory.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { type ImageImporter, importBusyboxImages } from './busybox-image.ts';
import { importNodeImage } from './node-image.ts';
import {
  claimSlot,
  cleanHost,
  type HostSnapshot,
  heldSlots,
  type PodmanSlot,
  releaseSlot,
  removeEmptyDirs,
  snapshotHost,
  staleSlots,
} from './podman-host.ts';

const execFileAsync = promisify(execFile);
const DOCKERD = '/usr/sbin/dockerd';
/** Makes the daemon die with us even when we are SIGKILLed (util-linux; skipped when absent). */
const SETPRIV = '/usr/bin/setpriv';
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 20_000;

export interface StartDockerdOptions {
  /** The instance's directory; created, and replaced on each start. */
  dir: string;
  log?: (line: string) => void;
  /**
   * Also serve the API on 127.0.0.1:`port` over TLS, requiring a client
   * certificate signed by `caFile` (`dockerd --tlsverify`); the unix socket
   * stays plain.
   */
  tls?: DockerdTls;
}

export interface DockerdTls {
  port: number;
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** A running local Docker Engine. */
export interface DockerdService {
  /** The unix socket serving the Docker Engine API. */
  socketPath: string;
  /** `unix://<socketPath>`, as DOCKER_HOST or SVK_DOCKER_HOST take it. */
  dockerHost: string;
  /** `tcp://127.0.0.1:<port>` when started with `tls`. */
  tlsHost?: string;
  /** The bridge network of this instance, for the Docker provider's SVK_DOCKER_NETWORK. */
  network: string;
  subnet: string;
  dir: string;
  /** The daemon's process id. */
  servicePid: number;
  /** Removes everything the instance created and stops it. Idempotent. */
  stop(): Promise<void>;
}

interface Layout {
  dir: string;
  dataRoot: string;
  execRoot: string;
  socket: string;
  pidFile: string;
  configFile: string;
  /** Which of DAEMON_RUN_DIRS the instance created, for whoever cleans up after it. */
  createdFile: string;
  log: string;
}

function layoutOf(dir: string): Layout {
  return {
    dir,
    dataRoot: join(dir, 'data'),
    execRoot: join(dir, 'exec'),
    socket: join(dir, 'docker.sock'),
    pidFile: join(dir, 'dockerd.pid'),
    configFile: join(dir, 'daemon.json'),
    createdFile: join(dir, 'created.json'),
    log: join(dir, 'dockerd.log'),
  };
}

/**
 * The daemon's command line. `--config-file` names an empty file of ours so
 * that no /etc/docker/daemon.json applies. No default bridge, no iptables
 * rules, no NAT and no change to the host's IP forwarding: the provider's
 * containers are on the instance's own bridge network, reached from the
 * host directly and published through docker-proxy. runc through
 * containerd with the cgroupfs driver (the hosts here run cgroup v1 without
 * systemd); overlay2 on the data root. With `tls`, a TCP listener on
 * loopback that verifies client certificates as well.
 */
function dockerdArgs(layout: Layout, tls: DockerdTls | undefined): string[] {
  return [
    `--config-file=${layout.configFile}`,
    `--data-root=${layout.dataRoot}`,
    `--exec-root=${layout.execRoot}`,
    `--pidfile=${layout.pidFile}`,
    `--host=unix://${layout.socket}`,
    '--bridge=none',
    '--iptables=false',
    '--ip6tables=false',
    '--ip-masq=false',
    '--ip-forward=false',
    '--exec-opt=native.cgroupdriver=cgroupfs',
    '--storage-driver=overlay2',
    '--log-level=warn',
    ...(tls
      ? [
          '--tlsverify',
          `--tlscacert=${tls.caFile}`,
          `--tlscert=${tls.certFile}`,
          `--tlskey=${tls.keyFile}`,
          `--host=tcp://127.0.0.1:${tls.port}`,
        ]
      : []),
  ];
}

export async function startDockerd(options: StartDockerdOptions): Promise<DockerdService> {
  const log = options.log ?? (() => {});
  await reapStale(log);
  const layout = layoutOf(options.dir);
  await removeDir(layout.dir);
  mkdirSync(layout.dir, { recursive: true });
  writeFileSync(layout.configFile, '{}\n');
  const host = snapshotHost();
  const created = Object.keys(DAEMON_RUN_DIRS).filter((path) => !existsSync(path));
  writeFileSync(layout.createdFile, JSON.stringify(created));
  const slot = await claimSlot(layout.dir, 'dockerd');
  const docker = new Docker({ socketPath: layout.socket });
  let child: ChildProcess | undefined;
  let stopping = false;
  const stop = once(() => stopInstance({ layout, slot, host, created, child, log }));
  try {
    const started = Date.now();
    child = spawnDaemon(layout, options.tls);
    child.on('exit', (code, signal) => {
      if (!stopping) log(`dockerd exited unexpectedly (${signal ?? code}); see ${layout.log}`);
    });
    await waitReady(docker, child);
    await importBusyboxImages(layout.dir, dockerImporter(docker));
    await importNodeImage(dockerImporter(docker));
    await docker.createNetwork({
      Name: slot.network,
      Driver: 'bridge',
      IPAM: { Driver: 'default', Config: [{ Subnet: slot.subnet }] },
      Options: { 'com.docker.network.bridge.name': slot.bridge },
    });
    const version = await docker.version();
    log(
      `dockerd ${version.Version} ready in ${((Date.now() - started) / 1000).toFixed(1)}s on ${layout.socket}`,
    );
  } catch (err) {
    stopping = true;
    await stop();
    throw err;
  }
  return {
    socketPath: layout.socket,
    dockerHost: `unix://${layout.socket}`,
    ...(options.tls ? { tlsHost: `tcp://127.0.0.1:${options.tls.port}` } : {}),
    network: slot.network,
    subnet: slot.subnet,
    dir: layout.dir,
    servicePid: child?.pid ?? 0,
    stop: () => {
      stopping = true;
      return stop();
    },
  };
}

/** Imports through the Engine API (`POST /images/create?fromSrc=-`), so that no docker CLI is needed. */
function dockerImporter(docker: Docker): ImageImporter {
  return {
    importTarball: async (tarball, tag, change) => {
      const [repo, version] = splitTag(tag);
      const stream = await docker.importImage(tarball, { repo, tag: version, changes: [change] });
      await new Promise<void>((resolve, reject) =>
        docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())),
      );
    },
    tag: async (source, target) => {
      const [repo, version] = splitTag(target);
      await docker.getImage(source).tag({ repo, tag: version });
    },
  };
}

function splitTag(ref: string): [string, string] {
  const colon = ref.lastIndexOf(':');
  return colon > ref.lastIndexOf('/') ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, 'latest'];
}

function spawnDaemon(layout: Layout, tls: DockerdTls | undefined): ChildProcess {
  const out = openSync(layout.log, 'a');
  // docker-init, docker-proxy, containerd and its runc shim are found on PATH.
  const env = { ...process.env, PATH: `/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH ?? ''}` };
  const args = dockerdArgs(layout, tls);
  const [cmd, argv] = existsSync(SETPRIV)
    ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', DOCKERD, ...args]]
    : [DOCKERD, args];
  const child = spawn(cmd, argv, { env, stdio: ['ignore', out, out] });
  closeSync(out);
  return child;
}

async function waitReady(docker: Docker, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
    if (child.exitCode !== null) throw new Error(`dockerd exited with ${child.exitCode} before it was ready`);
    try {
      await docker.ping();
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`dockerd not ready after ${READY_TIMEOUT_MS} ms`, { cause: err });
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * Host paths dockerd and its containerd use whatever their data and exec
 * roots say (managed plugins, the shims' sockets), with what they make in
 * them: removed when empty, if an instance created them.
 */
const DAEMON_RUN_DIRS: Readonly<Record<string, string[]>> = {
  '/run/docker': ['/run/docker/plugins'],
  '/run/containerd': ['/run/containerd/s'],
};

interface Instance {
  layout: Layout;
  slot: PodmanSlot;
  host?: HostSnapshot;
  /** Which of DAEMON_RUN_DIRS did not exist before the instance started. */
  created?: string[];
  child?: ChildProcess | undefined;
  log: (line: string) => void;
}

async function stopInstance(instance: Instance): Promise<void> {
  const { layout, slot, child, log } = instance;
  const docker = new Docker({ socketPath: layout.socket });
  const quietly = (what: string, p: Promise<unknown>) =>
    p.catch((err: unknown) =>
      log(`dockerd cleanup, ${what}: ${err instanceof Error ? err.message : String(err)}`),
    );
  if (child && child.exitCode === null && child.signalCode === null) {
    const containers = await docker.listContainers({ all: true }).catch(() => []);
    await Promise.all(
      containers.map((c) =>
        quietly(`remove ${c.Id}`, docker.getContainer(c.Id).remove({ force: true, v: true })),
      ),
    );
    await quietly('prune volumes', docker.pruneVolumes());
    await quietly(`remove network ${slot.network}`, removeNetwork(docker, slot.network));
    await stopChild(child);
  }
  // A network whose endpoints outlived their containers stays behind as the bridge interface.
  if (existsSync(`/sys/class/net/${slot.bridge}`))
    await quietly(`delete link ${slot.bridge}`, execFileAsync('ip', ['link', 'delete', slot.bridge]));
  await removeDir(layout.dir);
  releaseSlot(slot);
  // The last Docker Engine out removes the empty directories that dockerd and containerd make
  // whatever their roots say; the last engine instance of either kind cleans what Podman left.
  if (heldSlots('dockerd') === 0 && instance.created)
    removeEmptyDirs(instance.created.flatMap((path) => [...(DAEMON_RUN_DIRS[path] ?? []), path]));
  await cleanHost(instance.host ?? snapshotHost(), log);
}

/**
 * Removes the instance's network once its containers are gone. Right after
 * many forced removals, dockerd 20.10 may still count their endpoints
 * ("has active endpoints") for a moment: asked again for about 3 s.
 */
async function removeNetwork(docker: Docker, name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await docker.getNetwork(name).remove();
      return;
    } catch (err) {
      if (attempt >= 15 || !/active endpoints/i.test(String(err))) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/**
 * Deletes an instance's directory, unmounting first what a daemon that did
 * not stop cleanly left mounted there (overlay layers, network namespaces).
 */
async function removeDir(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) await execFileAsync('umount', ['-l', point]).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Cleans up after instances whose owner died (SIGKILL, a crashed run): the
 * daemon died with its owner, but containerd's shims keep their containers
 * running. A daemon started again on the same directory stops them (it does
 * not run with live restore), and the cleanup then removes them.
 */
async function reapStale(log: (line: string) => void): Promise<void> {
  for (const { slot, dir } of staleSlots('dockerd')) {
    log(`dockerd: cleaning up after a dead instance in ${dir}`);
    const layout = layoutOf(dir);
    let child: ChildProcess | undefined;
    if (existsSync(layout.configFile)) {
      child = spawnDaemon(layout, undefined);
      await waitReady(new Docker({ socketPath: layout.socket }), child).catch((err: unknown) =>
        log(`dockerd: the dead instance's daemon did not start again: ${String(err)}`),
      );
    }
    await stopInstance({ layout, slot, child, created: readCreated(layout), log });
  }
}

function readCreated(layout: Layout): string[] {
  try {
    const value: unknown = JSON.parse(readFileSync(layout.createdFile, 'utf8'));
    return Array.isArray(value)
      ? value.filter((p): p is string => typeof p === 'string' && p in DAEMON_RUN_DIRS)
      : [];
  } catch {
    return [];
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= fn();
    return running;
  };
}
