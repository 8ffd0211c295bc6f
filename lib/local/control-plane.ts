/**
 * A real Kubernetes control plane on loopback for tests and local runs: etcd,
 * kube-apiserver, kube-controller-manager (whose node lifecycle controller is
 * the judge of our node leases) and kube-scheduler v1.20.2, with TLS, token
 * authentication, `Node,RBAC` authorization and the virtual kubelet's RBAC
 * from `infra/rbac.yaml`.
 *
 * This file boots the components in order and hands out the running cluster.
 * The parts are in `control-plane/`, cut as controller-runtime's envtest cuts
 * its control plane: `binaries.ts` (where the binaries are), `pki.ts` (a CA
 * that issues named certificates), `credentials.ts` (the certificates, tokens
 * and kubeconfigs of one start), `flags.ts` (each binary's command line, pure),
 * `components.ts` (the four processes with their command lines), `process.ts`
 * and `signals.ts` (supervising the children), `readiness.ts` (waiting for
 * them) and `rbac.ts` (installing infra/rbac.yaml).
 *
 * Layout of `dir` (replaced on every start):
 *   certs/        CA, serving cert, service-account key pair
 *   etcd/         etcd data
 *   logs/<component>.log, pids/<component>.pid
 *   tokens.csv, admin.kubeconfig, kubelet.kubeconfig,
 *   controller-manager.kubeconfig, scheduler.kubeconfig
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { createToolingClients } from '../kube/tooling-clients.ts';
import { binDir, DEFAULT_ETCD, missingBinary } from './control-plane/binaries.ts';
import { type Components, type ControlPlanePorts, components } from './control-plane/components.ts';
import { type Credentials, type FunctionUser, writeCredentials } from './control-plane/credentials.ts';
import { LOOPBACK } from './control-plane/flags.ts';
import type { CertificateAuthority, CertificateFiles } from './control-plane/pki.ts';
import { type Component, killStaleProcesses } from './control-plane/process.ts';
import { applyRbac } from './control-plane/rbac.ts';
import {
  endpointOk,
  etcdHealthy,
  namespaceExists,
  serviceAccountHasToken,
  waitFor,
  waitReady,
} from './control-plane/readiness.ts';
import { forgetOnSignal, stopOnSignal } from './control-plane/signals.ts';
import { ControlPlaneStartError } from './control-plane/start-error.ts';
import { freePorts } from './free-ports.ts';

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
  /**
   * Where every component listens and the kubeconfigs point (default
   * 127.0.0.1): an address of a network namespace the components run in
   * (see `launcher`), as a kind node's container runs its control plane.
   */
  address?: string;
  /** A command every binary runs under, exec'ing it in the same process: `['ip', 'netns', 'exec', name]`. */
  launcher?: string[];
  /**
   * Addresses of this host where pods reach kube-apiserver (an engine bridge's gateway, as
   * SVK_POD_API_SERVER names it): its serving certificate names them, and it listens on every address
   * of the host (0.0.0.0), since a bridge's address exists only while a container is attached to it.
   * Requests are authenticated and authorized as on loopback.
   */
  podAddresses?: string[];
}

/**
 * A running control plane. All endpoints are on one address (127.0.0.1 unless
 * {@link StartControlPlaneOptions.address}); kubeconfigs verify
 * the server against the generated CA and authenticate with bearer tokens.
 */
export interface ControlPlane {
  /** https URL of kube-apiserver; stable across {@link stopApiServer}/{@link startApiServer}. */
  server: string;
  /** kubeconfig with `system:masters` rights: test setup and assertions only. */
  adminKubeconfig: string;
  /** kubeconfig of the virtual kubelet's identity (user/group `serverless-virtual-kubelet`), bound to infra/rbac.yaml. */
  kubeletKubeconfig: string;
  /** kubeconfig of the kubelet API's own identity (user/group `serverless-virtual-kubelet-kubelet-api`), bound to infra/rbac.yaml. */
  kubeletApiKubeconfig: string;
  /**
   * kubeconfig of each control-loop function's own user
   * (`serverless-virtual-kubelet:<function>`, no group), bound to that
   * function's roles in infra/rbac.yaml, as EKS access entries map each
   * function's role.
   */
  functionKubeconfigs: Record<FunctionUser, string>;
  /**
   * The cluster CA's certificate and key: it signs kube-apiserver's kubelet
   * client certificate, and can sign a local kubelet API's serving
   * certificate ({@link CertificateAuthority.open}).
   */
  ca: CertificateFiles;
  /** The working directory (pid files under `pids/`, logs under `logs/`). */
  dir: string;
  /** Host:port of every listener, for reports and debugging. */
  ports: ControlPlanePorts;
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
  const settings = withDefaults(options);
  const missing = missingBinary(settings.binDir, settings.etcdBinary);
  if (missing) {
    throw new ControlPlaneStartError(`${missing} is missing or not executable: run scripts/ensure-kube.sh`);
  }
  await prepareDirectory(settings.dir, settings.log);
  const ports = await allocatePorts();
  const credentials = await writeCredentials(
    settings.dir,
    settings.address,
    ports.apiServer,
    settings.podAddresses ?? [],
  );
  const plane = new LocalControlPlane(settings, ports, credentials);
  await plane.boot();
  settings.log(`control plane ready in ${seconds(started)}: ${plane.componentNames().join(', ')}`);
  return plane;
}

type Settings = Required<Omit<StartControlPlaneOptions, 'apiServerArgs' | 'launcher' | 'podAddresses'>> &
  Pick<StartControlPlaneOptions, 'apiServerArgs' | 'launcher' | 'podAddresses'>;

function withDefaults(options: StartControlPlaneOptions): Settings {
  return {
    ...options,
    dir: resolve(options.dir),
    binDir: options.binDir ?? binDir(),
    etcdBinary: options.etcdBinary ?? DEFAULT_ETCD,
    log: options.log ?? (() => {}),
    controllerManager: options.controllerManager ?? true,
    scheduler: options.scheduler ?? true,
    readyTimeoutMs: options.readyTimeoutMs ?? 120_000,
    address: options.address ?? LOOPBACK,
  };
}

/** Kills what a crashed run left in `dir`, then gives every component an empty directory. */
async function prepareDirectory(dir: string, log: (line: string) => void): Promise<void> {
  mkdirSync(dir, { recursive: true });
  await killStaleProcesses(dir, log);
  for (const sub of ['certs', 'etcd', 'logs', 'pids'])
    rmSync(join(dir, sub), { recursive: true, force: true });
  for (const sub of ['certs', 'logs', 'pids']) mkdirSync(join(dir, sub), { recursive: true });
  mkdirSync(join(dir, 'etcd'), { recursive: true, mode: 0o700 });
}

/** A free loopback port for every component, started or not. */
async function allocatePorts(): Promise<ControlPlanePorts> {
  const free = await freePorts(5, '127.0.0.1');
  const take = (): number => {
    const port = free.shift();
    if (port === undefined) throw new ControlPlaneStartError('ran out of free ports');
    return port;
  };
  return {
    etcdClient: take(),
    etcdPeer: take(),
    apiServer: take(),
    controllerManager: take(),
    scheduler: take(),
  };
}

interface Controller {
  component: Component;
  /** Its /healthz port. */
  port: number;
}

/** The running cluster: boots the components in order, and stops and restarts them on request. */
class LocalControlPlane implements ControlPlane {
  readonly server: string;
  readonly adminKubeconfig: string;
  readonly kubeletKubeconfig: string;
  readonly kubeletApiKubeconfig: string;
  readonly functionKubeconfigs: Record<FunctionUser, string>;
  readonly ca: CertificateFiles;
  readonly dir: string;
  readonly ports: ControlPlanePorts;
  readonly #settings: Settings;
  readonly #credentials: Credentials;
  readonly #components: Components;
  /** controller-manager and scheduler, those of them that this control plane runs. */
  readonly #controllers: Controller[];
  #stopping: Promise<void> | undefined;

  /** `ports` holds a port for every component, started or not. */
  constructor(settings: Settings, ports: ControlPlanePorts, credentials: Credentials) {
    this.#settings = settings;
    this.#credentials = credentials;
    this.#components = components(settings, ports, credentials);
    this.#controllers = [
      ...(settings.controllerManager
        ? [{ component: this.#components.controllerManager, port: ports.controllerManager }]
        : []),
      ...(settings.scheduler ? [{ component: this.#components.scheduler, port: ports.scheduler }] : []),
    ];
    this.server = credentials.server;
    this.adminKubeconfig = credentials.identities.kubeconfigs.admin;
    this.kubeletKubeconfig = credentials.identities.kubeconfigs.kubelet;
    this.kubeletApiKubeconfig = credentials.identities.kubeconfigs.kubeletApi;
    this.functionKubeconfigs = credentials.identities.kubeconfigs.functions;
    this.ca = { cert: credentials.ca.cert, key: credentials.ca.key };
    this.dir = settings.dir;
    this.ports = {
      ...ports,
      controllerManager: settings.controllerManager ? ports.controllerManager : 0,
      scheduler: settings.scheduler ? ports.scheduler : 0,
    };
    stopOnSignal(this);
  }

  componentNames(): string[] {
    const { etcd, apiserver } = this.#components;
    return [etcd, apiserver, ...this.#controllers.map((c) => c.component)].map((c) => c.name);
  }

  /**
   * etcd, then kube-apiserver; then the controllers boot (both retry until
   * they reach the API server) while the RBAC goes in. Stops everything on failure.
   */
  async boot(): Promise<void> {
    const { etcd, apiserver } = this.#components;
    const { log, readyTimeoutMs } = this.#settings;
    try {
      let t = Date.now();
      etcd.start();
      const { address } = this.#settings;
      await waitReady(etcd, readyTimeoutMs, etcdHealthy(`http://${address}:${this.ports.etcdClient}`));
      log(`etcd ready on ${address}:${this.ports.etcdClient} (peer ${this.ports.etcdPeer}) in ${seconds(t)}`);
      t = Date.now();
      apiserver.start();
      await this.#waitApiServer();
      log(`kube-apiserver ready at ${this.server} in ${seconds(t)}`);
      for (const { component } of this.#controllers) component.start();
      const { config: admin, core } = createToolingClients(this.adminKubeconfig);
      await this.#installRbac(admin, core);
      for (const controller of this.#controllers) await this.#waitController(controller, core);
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const { etcd, apiserver, controllerManager, scheduler } = this.#components;
      await Promise.all([controllerManager.stop(true), scheduler.stop(true)]);
      await apiserver.stop(true);
      await etcd.stop(true);
      forgetOnSignal(this);
    })();
    return this.#stopping;
  }

  stopApiServer(): Promise<void> {
    return this.#components.apiserver.stop();
  }

  async startApiServer(): Promise<void> {
    if (this.#stopping) throw new ControlPlaneStartError('the control plane was stopped');
    const { apiserver } = this.#components;
    if (apiserver.running) return;
    const t = Date.now();
    apiserver.start();
    await this.#waitApiServer();
    this.#settings.log(`kube-apiserver restarted at ${this.server} in ${seconds(t)}`);
  }

  async restartControllers(): Promise<void> {
    if (this.#stopping) throw new ControlPlaneStartError('the control plane was stopped');
    const t = Date.now();
    const restarting = this.#controllers.map(({ component, port }) => ({
      component,
      ready: () => waitReady(component, this.#settings.readyTimeoutMs, this.#healthz(port)),
    }));
    await Promise.all(restarting.map(({ component }) => component.stop()));
    for (const { component } of restarting) component.start();
    await Promise.all(restarting.map(({ ready }) => ready()));
    this.#settings.log(
      `${restarting.map(({ component }) => component.name).join(' and ')} restarted in ${seconds(t)}`,
    );
  }

  #waitApiServer(): Promise<void> {
    const { caPem, identities } = this.#credentials;
    const readyz = endpointOk(`${this.server}/readyz`, { ca: caPem, token: identities.adminToken });
    return waitReady(this.#components.apiserver, this.#settings.readyTimeoutMs, readyz);
  }

  #healthz(port: number) {
    return endpointOk(`https://${this.#settings.address}:${port}/healthz`, { ca: this.#credentials.caPem });
  }

  /** Applies infra/rbac.yaml once the API server has created the namespaces it refers to. */
  async #installRbac(admin: KubeConfig, core: CoreV1Api): Promise<void> {
    const t = Date.now();
    for (const ns of ['default', 'kube-system', 'kube-node-lease']) {
      const exists = namespaceExists(core, ns);
      await waitFor(`namespace ${ns}`, this.#settings.readyTimeoutMs, this.#components.apiserver, exists);
    }
    await applyRbac(admin);
    this.#settings.log(`applied infra/rbac.yaml in ${seconds(t)}`);
  }

  /**
   * A controller's /healthz; for the controller manager also the `default`
   * service account's token: its token controller working is the sign that
   * pods can be admitted (ServiceAccount admission).
   */
  async #waitController({ component, port }: Controller, core: CoreV1Api): Promise<void> {
    const { readyTimeoutMs, log } = this.#settings;
    const t = Date.now();
    await waitReady(component, readyTimeoutMs, this.#healthz(port));
    if (component === this.#components.controllerManager) {
      const token = serviceAccountHasToken(core, 'default', 'default');
      await waitFor('default service account token', readyTimeoutMs, component, token);
    }
    log(`${component.name} ready on ${this.#settings.address}:${port} in ${seconds(t)}`);
  }
}

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)}s`;
}
