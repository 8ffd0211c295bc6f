/**
 * A real Kubernetes control plane on loopback for tests and local runs: etcd,
 * kube-apiserver, kube-controller-manager (whose node lifecycle controller is
 * the judge of our node leases) and kube-scheduler v1.20.2, with TLS, token
 * authentication, `Node,RBAC` authorization and the virtual kubelet's RBAC
 * from `infra/rbac.yaml`.
 *
 * Layout of `dir` (replaced on every start):
 *   certs/        CA, serving cert, service-account key pair
 *   etcd/         etcd data
 *   logs/<component>.log, pids/<component>.pid
 *   tokens.csv, admin.kubeconfig, kubelet.kubeconfig,
 *   controller-manager.kubeconfig, scheduler.kubeconfig
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, type Server } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { dumpYaml, type KubernetesObject, loadAllYaml, PatchStrategy } from '@kubernetes/client-node';
import { createKubeClients, createObjectClient, isNotFound, loadKubeConfig } from '../kube/client.ts';
import { issueCertificate } from './kubelet-api-pki.ts';

const execFileAsync = promisify(execFile);

export const KUBE_VERSION = 'v1.20.2';
const KUBE_BINARIES = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
const DEFAULT_ETCD = '/usr/bin/etcd';
/** Makes a child die with us even when we are SIGKILLed (util-linux; skipped when absent). */
const SETPRIV = '/usr/bin/setpriv';
const RBAC_MANIFEST = new URL('../../infra/rbac.yaml', import.meta.url);
const FIELD_MANAGER = 'svk-local-control-plane';
/** The identity `infra/rbac.yaml` binds; kubelet.kubeconfig authenticates as it. */
export const KUBELET_USER = 'serverless-virtual-kubelet';
export const KUBELET_GROUP = 'serverless-virtual-kubelet';
const SERVICE_CIDR = '10.0.0.0/24';
const SERVICE_IP = '10.0.0.1';

/**
 * Directory holding the cached control-plane binaries, as built by
 * `scripts/ensure-kube.sh` (same `SVK_CACHE_DIR` override).
 */
export function binDir(): string {
  const cache = process.env.SVK_CACHE_DIR ?? join(homedir(), '.cache', 'serverless-virtual-kubelet');
  return join(cache, `kube-${KUBE_VERSION}`);
}

/** True when kube-apiserver, kube-controller-manager, kube-scheduler (in `dir`) and etcd are executable files. */
export function controlPlaneBinariesPresent(dir: string = binDir(), etcd: string = DEFAULT_ETCD): boolean {
  return [...KUBE_BINARIES.map((b) => join(dir, b)), etcd].every(isExecutableFile);
}

export interface StartControlPlaneOptions {
  /** Working directory for data, certs, kubeconfigs, logs and pid files; created, and replaced on each start. */
  dir: string;
  /** Where the kube-* binaries are; default {@link binDir}(). */
  binDir?: string;
  /** etcd binary; default /usr/bin/etcd (Debian etcd-server). */
  etcdBinary?: string;
  /** Progress and unexpected-exit lines. */
  log?: (line: string) => void;
  /** Start kube-controller-manager (default true). */
  controllerManager?: boolean;
  /** Start kube-scheduler (default true). */
  scheduler?: boolean;
  /** Deadline for each component to become ready (default 120 s; a noisy 2-core machine needs headroom). */
  readyTimeoutMs?: number;
  /**
   * Extra kube-apiserver flags, appended after ours (so a repeated single-valued
   * flag overrides ours) and kept across {@link ControlPlane.stopApiServer} and
   * {@link ControlPlane.startApiServer}. For clusters shaped unlike the default,
   * e.g. `--runtime-config=coordination.k8s.io/v1=false,coordination.k8s.io/v1beta1=false`
   * for one without the Lease API. A flag the API server rejects fails the start
   * with its log tail.
   */
  apiServerArgs?: string[];
}

/**
 * A running control plane. All endpoints are on 127.0.0.1; kubeconfigs verify
 * the server against the generated CA and authenticate with bearer tokens.
 */
export interface ControlPlane {
  /** https URL of kube-apiserver; stable across {@link stopApiServer}/{@link startApiServer}. */
  server: string;
  /** kubeconfig with `system:masters` rights: test setup and assertions only. */
  adminKubeconfig: string;
  /** kubeconfig of the virtual kubelet's identity (user/group `serverless-virtual-kubelet`), bound to infra/rbac.yaml. */
  kubeletKubeconfig: string;
  /** The working directory (pid files under `pids/`, logs under `logs/`). */
  dir: string;
  /** Host:port of every listener, for reports and debugging. */
  ports: ControlPlanePorts;
  /** The cluster CA: it verifies the API server, signs kube-apiserver's kubelet client certificate, and can sign a kubelet API's serving certificate. */
  ca: { certPath: string; keyPath: string };
  /** Stops every component (SIGTERM, then SIGKILL after a timeout) and waits for them to exit. Idempotent. */
  stop(): Promise<void>;
  /** Stops kube-apiserver only; etcd, controller-manager and scheduler keep running. No-op when stopped. */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port and waits until /readyz passes. No-op when running. */
  startApiServer(): Promise<void>;
  /**
   * Restarts kube-controller-manager and kube-scheduler and waits for their
   * /healthz. After an API server outage their informers back off for up to
   * 30 s before relisting, so the node lifecycle controller would judge
   * leases on a stale view for that long; fresh processes relist at once.
   */
  restartControllers(): Promise<void>;
}

export interface ControlPlanePorts {
  etcdClient: number;
  etcdPeer: number;
  apiServer: number;
  /** 0 when the controller-manager is not started. */
  controllerManager: number;
  /** 0 when the scheduler is not started. */
  scheduler: number;
}

/** A component failed to start or become ready; the message carries the tail of its log. */
export class ControlPlaneStartError extends Error {
  override readonly name = 'ControlPlaneStartError';
}

/**
 * Starts etcd, kube-apiserver, and (by default) kube-controller-manager and
 * kube-scheduler on free loopback ports, waits until each is ready, creates
 * nothing but the RBAC of `infra/rbac.yaml`, and resolves once the cluster
 * can take pods: the `default` service account has its token (controller
 * manager working) and the scheduler is healthy.
 *
 * Processes left by a crashed run in the same `dir` are killed first. The
 * children die with this process: on `process.exit`, on a signal nobody else
 * handles, and (via `setpriv --pdeathsig`) even on SIGKILL.
 * @throws ControlPlaneStartError when a binary is missing, or a component
 * exits or is not ready by the deadline; everything started is stopped first.
 */
export async function startControlPlane(options: StartControlPlaneOptions): Promise<ControlPlane> {
  const started = Date.now();
  const dir = resolve(options.dir);
  const bin = options.binDir ?? binDir();
  const etcdBinary = options.etcdBinary ?? DEFAULT_ETCD;
  const log = options.log ?? (() => {});
  const withControllerManager = options.controllerManager ?? true;
  const withScheduler = options.scheduler ?? true;
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;

  for (const path of [etcdBinary, ...KUBE_BINARIES.map((b) => join(bin, b))]) {
    if (!isExecutableFile(path)) {
      throw new ControlPlaneStartError(`${path} is missing or not executable: run scripts/ensure-kube.sh`);
    }
  }

  mkdirSync(dir, { recursive: true });
  await killStaleProcesses(dir, log);
  for (const sub of ['certs', 'etcd', 'logs', 'pids'])
    rmSync(join(dir, sub), { recursive: true, force: true });
  for (const sub of ['certs', 'logs', 'pids']) mkdirSync(join(dir, sub), { recursive: true });
  mkdirSync(join(dir, 'etcd'), { recursive: true, mode: 0o700 });

  const free = await freePorts(5);
  const take = (): number => {
    const port = free.shift();
    if (port === undefined) throw new ControlPlaneStartError('ran out of free ports');
    return port;
  };
  const [etcdClient, etcdPeer, apiServer, cmPort, schedPort] = [take(), take(), take(), take(), take()];
  const ports: ControlPlanePorts = {
    etcdClient,
    etcdPeer,
    apiServer,
    controllerManager: withControllerManager ? cmPort : 0,
    scheduler: withScheduler ? schedPort : 0,
  };
  const server = `https://127.0.0.1:${apiServer}`;

  const certs = await writeCertificates(join(dir, 'certs'));
  // kube-apiserver's client certificate for kubelets, as kubeadm's apiserver-kubelet-client.
  const kubeletClient = await issueCertificate({
    ca: { certPath: certs.caCert, keyPath: certs.caKey },
    dir: join(dir, 'certs'),
    name: 'apiserver-kubelet-client',
    commonName: 'kube-apiserver-kubelet-client',
    organizations: ['system:masters'],
    usage: 'client',
  });
  const ca = readFileSync(certs.caCert);
  const tokens = {
    admin: randomToken(),
    controllerManager: randomToken(),
    scheduler: randomToken(),
    kubelet: randomToken(),
  };
  const tokenFile = join(dir, 'tokens.csv');
  writeFileSync(
    tokenFile,
    [
      `${tokens.admin},svk-admin,svk-admin,"system:masters"`,
      `${tokens.controllerManager},system:kube-controller-manager,system:kube-controller-manager`,
      `${tokens.scheduler},system:kube-scheduler,system:kube-scheduler`,
      `${tokens.kubelet},${KUBELET_USER},${KUBELET_USER},"${KUBELET_GROUP}"`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const kubeconfigs = {
    admin: writeKubeconfig(join(dir, 'admin.kubeconfig'), server, ca, 'svk-admin', tokens.admin),
    kubelet: writeKubeconfig(join(dir, 'kubelet.kubeconfig'), server, ca, KUBELET_USER, tokens.kubelet),
    controllerManager: writeKubeconfig(
      join(dir, 'controller-manager.kubeconfig'),
      server,
      ca,
      'system:kube-controller-manager',
      tokens.controllerManager,
    ),
    scheduler: writeKubeconfig(
      join(dir, 'scheduler.kubeconfig'),
      server,
      ca,
      'system:kube-scheduler',
      tokens.scheduler,
    ),
  };

  const component = (name: string, binary: string, args: string[], stopGraceMs?: number) =>
    new Component({ name, binary, args, dir, log, ...(stopGraceMs ? { stopGraceMs } : {}) });
  const etcd = component('etcd', etcdBinary, [
    '--name=svk',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=svk=http://127.0.0.1:${etcdPeer}`,
    '--initial-cluster-state=new',
    '--logger=zap',
    '--log-outputs=stderr',
  ]);
  const apiserver = component(
    'kube-apiserver',
    join(bin, 'kube-apiserver'),
    [
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiServer}`,
      '--insecure-port=0',
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      `--cert-dir=${join(dir, 'certs')}`,
      `--tls-cert-file=${certs.servingCert}`,
      `--tls-private-key-file=${certs.servingKey}`,
      `--client-ca-file=${certs.caCert}`,
      `--token-auth-file=${tokenFile}`,
      // How it authenticates to kubelets, and verifies their serving certificates (the kubelet API's are CA-signed).
      `--kubelet-client-certificate=${kubeletClient.certPath}`,
      `--kubelet-client-key=${kubeletClient.keyPath}`,
      `--kubelet-certificate-authority=${certs.caCert}`,
      '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${certs.saPublic}`,
      `--service-account-signing-key-file=${certs.saPrivate}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // The `kubernetes` Service would need a non-loopback endpoint address; nothing runs in-cluster here.
      '--endpoint-reconciler-type=none',
      '--allow-privileged=true',
      '--profiling=false',
      ...(options.apiServerArgs ?? []),
    ],
    // 1.20 does not end open watches on SIGTERM: with the controller-manager and scheduler still
    // watching (stopApiServer), it would wait --request-timeout (60 s) for them. It holds no state.
    APISERVER_STOP_GRACE_MS,
  );
  const controllerManager = component('kube-controller-manager', join(bin, 'kube-controller-manager'), [
    `--kubeconfig=${kubeconfigs.controllerManager}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${cmPort}`,
    '--port=0',
    `--tls-cert-file=${certs.servingCert}`,
    `--tls-private-key-file=${certs.servingKey}`,
    `--cert-dir=${join(dir, 'certs')}`,
    // One instance: leader election only slows start-up and makes it exit when the API server is away.
    '--leader-elect=false',
    '--controllers=*',
    `--service-account-private-key-file=${certs.saPrivate}`,
    `--root-ca-file=${certs.caCert}`,
    '--use-service-account-credentials=true',
    `--cluster-signing-cert-file=${certs.caCert}`,
    `--cluster-signing-key-file=${certs.caKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--profiling=false',
    // v=2 logs the node lifecycle controller's decisions about our nodes.
    '--v=2',
  ]);
  const scheduler = component('kube-scheduler', join(bin, 'kube-scheduler'), [
    `--kubeconfig=${kubeconfigs.scheduler}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${schedPort}`,
    '--port=0',
    `--tls-cert-file=${certs.servingCert}`,
    `--tls-private-key-file=${certs.servingKey}`,
    `--cert-dir=${join(dir, 'certs')}`,
    '--leader-elect=false',
    '--profiling=false',
  ]);
  const all = [
    etcd,
    apiserver,
    ...(withControllerManager ? [controllerManager] : []),
    ...(withScheduler ? [scheduler] : []),
  ];

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await Promise.all([controllerManager.stop(true), scheduler.stop(true)]);
      await apiserver.stop(true);
      await etcd.stop(true);
      running.delete(handle);
      syncSignalHandlers();
    })();
    return stopping;
  };
  const handle = { stop };
  running.add(handle);
  syncSignalHandlers();

  const waitApiServer = async () => {
    await waitReady(apiserver, readyTimeoutMs, () =>
      probe(`${server}/readyz`, { ca, token: tokens.admin }).then((r) => r.status === 200),
    );
  };

  const waitControllerManager = () =>
    waitReady(controllerManager, readyTimeoutMs, () =>
      probe(`https://127.0.0.1:${cmPort}/healthz`, { ca }).then((r) => r.status === 200),
    );
  const waitScheduler = () =>
    waitReady(scheduler, readyTimeoutMs, () =>
      probe(`https://127.0.0.1:${schedPort}/healthz`, { ca }).then((r) => r.status === 200),
    );

  try {
    let t = Date.now();
    etcd.start();
    await waitReady(etcd, readyTimeoutMs, () =>
      probe(`http://127.0.0.1:${etcdClient}/health`, {}).then(
        (r) => r.status === 200 && r.body.includes('"true"'),
      ),
    );
    log(`etcd ready on 127.0.0.1:${etcdClient} (peer ${etcdPeer}) in ${seconds(t)}`);

    t = Date.now();
    apiserver.start();
    await waitApiServer();
    log(`kube-apiserver ready at ${server} in ${seconds(t)}`);

    // Both retry until they can reach the API server, so they boot while we set up RBAC.
    if (withControllerManager) controllerManager.start();
    if (withScheduler) scheduler.start();

    t = Date.now();
    const admin = loadKubeConfig({ kubeconfigPath: kubeconfigs.admin });
    const { core } = createKubeClients(admin);
    // The API server creates its system namespaces right after it turns ready; RBAC needs kube-node-lease.
    for (const ns of ['default', 'kube-system', 'kube-node-lease']) {
      await waitFor(`namespace ${ns}`, readyTimeoutMs, apiserver, async () => {
        try {
          await core.readNamespace({ name: ns });
          return true;
        } catch (err) {
          if (isNotFound(err)) return false;
          throw err;
        }
      });
    }
    await applyManifests(admin, readFileSync(RBAC_MANIFEST, 'utf8'));
    log(`applied infra/rbac.yaml in ${seconds(t)}`);

    if (withControllerManager) {
      t = Date.now();
      await waitControllerManager();
      // The token controller working is the sign that pods can be admitted (ServiceAccount admission).
      await waitFor('default service account token', readyTimeoutMs, controllerManager, async () => {
        try {
          const sa = await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' });
          return (sa.secrets?.length ?? 0) > 0;
        } catch (err) {
          if (isNotFound(err)) return false;
          throw err;
        }
      });
      log(`kube-controller-manager ready on 127.0.0.1:${cmPort} in ${seconds(t)}`);
    }
    if (withScheduler) {
      t = Date.now();
      await waitScheduler();
      log(`kube-scheduler ready on 127.0.0.1:${schedPort} in ${seconds(t)}`);
    }
  } catch (err) {
    await stop();
    throw err;
  }

  log(`control plane ready in ${seconds(started)}: ${all.map((c) => c.name).join(', ')}`);
  return {
    server,
    adminKubeconfig: kubeconfigs.admin,
    kubeletKubeconfig: kubeconfigs.kubelet,
    dir,
    ports,
    ca: { certPath: certs.caCert, keyPath: certs.caKey },
    stop,
    stopApiServer: () => apiserver.stop(),
    startApiServer: async () => {
      if (stopping) throw new ControlPlaneStartError('the control plane was stopped');
      if (apiserver.running) return;
      const t = Date.now();
      apiserver.start();
      await waitApiServer();
      log(`kube-apiserver restarted at ${server} in ${seconds(t)}`);
    },
    restartControllers: async () => {
      if (stopping) throw new ControlPlaneStartError('the control plane was stopped');
      const t = Date.now();
      const restarting = [
        ...(withControllerManager ? [[controllerManager, waitControllerManager] as const] : []),
        ...(withScheduler ? [[scheduler, waitScheduler] as const] : []),
      ];
      await Promise.all(restarting.map(([component]) => component.stop()));
      for (const [component] of restarting) component.start();
      await Promise.all(restarting.map(([, wait]) => wait()));
      log(`${restarting.map(([c]) => c.name).join(' and ')} restarted in ${seconds(t)}`);
    },
  };
}

// ---------------------------------------------------------------------------
// Processes

interface ComponentOptions {
  name: string;
  /** How long SIGTERM may take before SIGKILL; default {@link STOP_GRACE_MS}. */
  stopGraceMs?: number;
  binary: string;
  args: string[];
  dir: string;
  log: (line: string) => void;
}

const STOP_GRACE_MS = 10_000;
const APISERVER_STOP_GRACE_MS = 3_000;
const LOG_TAIL_LINES = 30;

/** One child process with its log file and pid file; restartable. */
class Component {
  readonly name: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopRequested = false;
  /** Set by a final stop: the control plane is shutting down, so nothing may start again. */
  private closed = false;
  /** Exit code or signal of the last run, once it has exited. */
  exitStatus: string | undefined;

  constructor(private readonly options: ComponentOptions) {
    this.name = options.name;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  get logPath(): string {
    return join(this.options.dir, 'logs', `${this.name}.log`);
  }

  private get pidPath(): string {
    return join(this.options.dir, 'pids', `${this.name}.pid`);
  }

  start(): void {
    if (this.closed) throw new ControlPlaneStartError(`${this.name}: the control plane was stopped`);
    if (this.child) return;
    this.stopRequested = false;
    this.exitStatus = undefined;
    const out = openSync(this.logPath, 'a');
    const [command, args] = existsSync(SETPRIV)
      ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', this.options.binary, ...this.options.args]]
      : [this.options.binary, this.options.args];
    // Own process group: a terminal's Ctrl-C goes to the runner, which stops us in order.
    const child = spawn(command, args, { stdio: ['ignore', out, out], detached: true });
    closeSync(out);
    const pid = child.pid;
    this.child = child;
    // Unreferenced: a caller that forgets stop() still exits, and the exit hook kills us.
    child.unref();
    if (pid !== undefined) {
      writeFileSync(this.pidPath, `${pid}\n`);
      liveChildren.add(pid);
    }
    this.exited = new Promise<void>((resolveExit) => {
      const onGone = (status: string) => {
        if (pid !== undefined) liveChildren.delete(pid);
        this.exitStatus = status;
        this.child = undefined;
        rmSync(this.pidPath, { force: true });
        if (!this.stopRequested) {
          this.options.log(
            `${this.name} exited unexpectedly (${status}); log ${this.logPath}:\n${this.logTail()}`,
          );
        }
        resolveExit();
      };
      child.once('exit', (code, signal) => onGone(signal ? `signal ${signal}` : `code ${code}`));
      child.once('error', (err) => onGone(`spawn error: ${err.message}`));
    });
  }

  /**
   * SIGTERM, then SIGKILL after the grace period; resolves once the
   * process has exited. `final` forbids any later start.
   */
  async stop(final = false): Promise<void> {
    if (final) this.closed = true;
    const child = this.child;
    if (!child) return;
    this.stopRequested = true;
    child.ref();
    child.kill('SIGTERM');
    const graceMs = this.options.stopGraceMs ?? STOP_GRACE_MS;
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolveKill) => {
      timer = setTimeout(() => {
        this.options.log(`${this.name} still running ${graceMs / 1000}s after SIGTERM; sending SIGKILL`);
        child.kill('SIGKILL');
        resolveKill();
      }, graceMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    await this.exited;
  }

  logTail(lines = LOG_TAIL_LINES): string {
    try {
      return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** Pids of children still running, for the synchronous last-resort kill on process exit. */
const liveChildren = new Set<number>();
process.on('exit', () => {
  for (const pid of liveChildren) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

/**
 * Running control planes. While there are any, SIGINT/SIGTERM/SIGHUP stop them
 * gracefully and then re-raise the signal -- but only when no one else listens
 * for that signal: a runner with its own handler owns the shutdown order and
 * calls stop() itself (the exit hook above still backs it up).
 */
const running = new Set<{ stop(): Promise<void> }>();
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
let signalHandlersInstalled = false;

function onSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  void Promise.allSettled([...running].map((cp) => cp.stop())).then(() => {
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    signalHandlersInstalled = false;
    process.kill(process.pid, signal);
  });
}

function syncSignalHandlers(): void {
  if (running.size > 0 && !signalHandlersInstalled) {
    for (const s of SIGNALS) process.on(s, onSignal);
    signalHandlersInstalled = true;
  } else if (running.size === 0 && signalHandlersInstalled) {
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    signalHandlersInstalled = false;
  }
}

/**
 * Kills processes recorded in `dir/pids` by a previous run that did not stop
 * cleanly. A pid only counts when its command line mentions `dir`, so a
 * recycled pid of an unrelated process is never touched.
 */
async function killStaleProcesses(dir: string, log: (line: string) => void): Promise<void> {
  const pidDir = join(dir, 'pids');
  if (!existsSync(pidDir)) return;
  const stale: number[] = [];
  for (const file of readdirSync(pidDir)) {
    const pid = Number.parseInt(readFileSync(join(pidDir, file), 'utf8'), 10);
    unlinkSync(join(pidDir, file));
    if (!Number.isInteger(pid) || pid <= 0) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    if (!cmdline.includes(dir)) continue;
    log(`killing stale ${file.replace(/\.pid$/, '')} (pid ${pid}) left by a previous run`);
    stale.push(pid);
    signal(pid, 'SIGTERM');
  }
  const deadline = Date.now() + STOP_GRACE_MS;
  while (stale.some(isAlive)) {
    if (Date.now() > deadline) {
      for (const pid of stale) signal(pid, 'SIGKILL');
    }
    await delay(100);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (exited, not yet reaped by its parent) is as good as gone.
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------
// Readiness

const PROBE_INTERVAL_MS = 200;
const PROBE_TIMEOUT_MS = 3_000;

/** Polls `check` until true; fails early with the log tail when the component exits, or at the deadline. */
async function waitReady(
  component: Component,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<void> {
  await waitFor(`${component.name} readiness`, timeoutMs, component, check);
}

async function waitFor(
  what: string,
  timeoutMs: number,
  component: Component,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    if (!component.running) {
      throw new ControlPlaneStartError(
        `${component.name} exited (${component.exitStatus ?? 'not started'}) while waiting for ${what}; ` +
          `log ${component.logPath}:\n${component.logTail()}`,
      );
    }
    try {
      if (await check()) return;
      lastError = '';
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      throw new ControlPlaneStartError(
        `timed out after ${timeoutMs / 1000}s waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}; ` +
          `log ${component.logPath}:\n${component.logTail()}`,
      );
    }
    await delay(PROBE_INTERVAL_MS);
  }
}

interface ProbeResult {
  status: number;
  body: string;
}

/** One GET with a short timeout; https URLs verify against `ca`. */
function probe(url: string, options: { ca?: Buffer; token?: string }): Promise<ProbeResult> {
  return new Promise((resolveProbe, reject) => {
    const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
    const callback = (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolveProbe({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:')
      ? httpsRequest(url, { method: 'GET', headers, ca: options.ca, timeout: PROBE_TIMEOUT_MS }, callback)
      : httpRequest(url, { method: 'GET', headers, timeout: PROBE_TIMEOUT_MS }, callback);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Server-side applies every object of a multi-document manifest, as cluster admin. */
async function applyManifests(admin: ReturnType<typeof loadKubeConfig>, yaml: string): Promise<void> {
  const client = createObjectClient(admin);
  const objects: unknown[] = loadAllYaml(yaml);
  for (const object of objects) {
    if (!isKubernetesObject(object)) continue;
    await client.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }
}

function isKubernetesObject(value: unknown): value is KubernetesObject {
  return typeof value === 'object' && value !== null && 'apiVersion' in value && 'kind' in value;
}

// ---------------------------------------------------------------------------
// Certificates, tokens, kubeconfigs

interface CertificatePaths {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  saPrivate: string;
  saPublic: string;
}

/**
 * A CA and one serving certificate (127.0.0.1, localhost and the in-cluster
 * names) shared by the three kube servers, via the openssl CLI (node:crypto
 * cannot sign X.509); the service-account key pair via node:crypto.
 */
async function writeCertificates(certDir: string): Promise<CertificatePaths> {
  const p = (name: string) => join(certDir, name);
  const paths: CertificatePaths = {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p('serving.crt'),
    servingKey: p('serving.key'),
    saPrivate: p('sa.key'),
    saPublic: p('sa.pub'),
  };
  writeFileSync(
    p('openssl.cnf'),
    [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      '[dn]',
      '[ca]',
      'basicConstraints = critical, CA:TRUE',
      'keyUsage = critical, keyCertSign, cRLSign, digitalSignature',
      'subjectKeyIdentifier = hash',
      '[serving]',
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature, keyEncipherment',
      'extendedKeyUsage = serverAuth',
      'authorityKeyIdentifier = keyid',
      `subjectAltName = IP:127.0.0.1, DNS:localhost, IP:${SERVICE_IP}, DNS:kubernetes, DNS:kubernetes.default, ` +
        'DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local',
      '',
    ].join('\n'),
  );
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const cnf = ['-config', p('openssl.cnf')];
  const serial = () => `0x${randomBytes(16).toString('hex')}`;
  await openssl([
    'req',
    '-x509',
    ...ec,
    ...cnf,
    '-extensions',
    'ca',
    '-subj',
    '/CN=svk-local-ca',
    '-days',
    '3650',
    '-set_serial',
    serial(),
    '-keyout',
    paths.caKey,
    '-out',
    paths.caCert,
  ]);
  await openssl([
    'req',
    '-new',
    ...ec,
    ...cnf,
    '-subj',
    '/CN=svk-local-kube',
    '-keyout',
    paths.servingKey,
    '-out',
    p('serving.csr'),
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    p('serving.csr'),
    '-CA',
    paths.caCert,
    '-CAkey',
    paths.caKey,
    '-set_serial',
    serial(),
    '-days',
    '365',
    '-extfile',
    p('openssl.cnf'),
    '-extensions',
    'serving',
    '-out',
    paths.servingCert,
  ]);
  const sa = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  writeFileSync(paths.saPrivate, sa.privateKey, { mode: 0o600 });
  writeFileSync(paths.saPublic, sa.publicKey);
  return paths;
}

async function openssl(args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args, { timeout: 30_000 });
  } catch (err) {
    const stderr = typeof err === 'object' && err !== null && 'stderr' in err ? String(err.stderr) : '';
    throw new ControlPlaneStartError(`openssl ${args[0]} failed: ${stderr || String(err)}`, { cause: err });
  }
}

function randomToken(): string {
  return randomBytes(24).toString('hex');
}

function writeKubeconfig(path: string, server: string, ca: Buffer, user: string, token: string): string {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'svk-local', cluster: { server, 'certificate-authority-data': ca.toString('base64') } },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'svk-local', context: { cluster: 'svk-local', user } }],
    'current-context': 'svk-local',
  };
  writeFileSync(path, dumpYaml(config), { mode: 0o600 });
  return path;
}

// ---------------------------------------------------------------------------
// Small helpers

/** Distinct free loopback ports: all listeners are held open together so none is handed out twice. */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolveServer, reject) => {
          const srv = createServer();
          srv.once('error', reject);
          srv.listen(0, '127.0.0.1', () => resolveServer(srv));
        }),
    ),
  );
  const ports = servers.map((srv) => {
    const address = srv.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected listener address');
    return address.port;
  });
  await Promise.all(servers.map((srv) => new Promise((r) => srv.close(r))));
  return ports;
}

function isExecutableFile(path: string): boolean {
  try {
    const st = statSync(path);
    return st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)}s`;
}
