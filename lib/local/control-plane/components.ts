/**
 * The control plane's four processes, each with its command line from
 * `flags.ts` and the paths and ports of one start; building them starts nothing.
 */
import { join } from 'node:path';
import type { Credentials } from './credentials.ts';
import { apiServerFlags, controllerManagerFlags, etcdFlags, schedulerFlags } from './flags.ts';
import { Component } from './process.ts';

export interface ComponentSettings {
  /** The control plane's directory. */
  dir: string;
  binDir: string;
  etcdBinary: string;
  apiServerArgs?: readonly string[] | undefined;
  /** Where every component listens. */
  address: string;
  /** Further addresses kube-apiserver serves pods at: it then listens on every address (0.0.0.0). */
  podAddresses?: readonly string[] | undefined;
  /** A command each binary runs under (`ip netns exec <name>`), if any. */
  launcher?: readonly string[] | undefined;
  log: (line: string) => void;
}

/** The loopback port of each component, chosen free at start. */
export interface ControlPlanePorts {
  etcdClient: number;
  etcdPeer: number;
  apiServer: number;
  /** 0 when the controller-manager is not started. */
  controllerManager: number;
  /** 0 when the scheduler is not started. */
  scheduler: number;
}

/**
 * kube-apiserver 1.20 does not end open watches on SIGTERM: with the
 * controller-manager and scheduler still watching (stopApiServer), it would
 * wait --request-timeout (60 s) for them. It holds no state, so a short grace.
 */
const APISERVER_STOP_GRACE_MS = 3_000;

export interface Components {
  etcd: Component;
  apiserver: Component;
  controllerManager: Component;
  scheduler: Component;
}

/** The four processes, with their command lines; none is started. */
export function components(
  settings: ComponentSettings,
  ports: ControlPlanePorts,
  credentials: Credentials,
): Components {
  const { dir, log, address } = settings;
  const launcher = settings.launcher ?? [];
  const certDir = join(dir, 'certs');
  const { ca, serving, kubeletClient, serviceAccount, identities } = credentials;
  const bin = (name: string) => join(settings.binDir, name);
  const etcdArgs = etcdFlags({
    address,
    dataDir: join(dir, 'etcd'),
    clientPort: ports.etcdClient,
    peerPort: ports.etcdPeer,
  });
  const apiServerArgs = apiServerFlags({
    address,
    ...(settings.podAddresses?.length ? { bindAddress: '0.0.0.0' } : {}),
    port: ports.apiServer,
    etcdClientPort: ports.etcdClient,
    certDir,
    serving,
    caCert: ca.cert,
    kubeletClient,
    tokenFile: identities.tokenFile,
    serviceAccount,
    ...(settings.apiServerArgs ? { extraArgs: settings.apiServerArgs } : {}),
  });
  const controllerManagerArgs = controllerManagerFlags({
    address,
    port: ports.controllerManager,
    kubeconfig: identities.kubeconfigs.controllerManager,
    certDir,
    serving,
    ca: { cert: ca.cert, key: ca.key },
    serviceAccountPrivateKey: serviceAccount.privateKey,
  });
  const schedulerArgs = schedulerFlags({
    address,
    port: ports.scheduler,
    kubeconfig: identities.kubeconfigs.scheduler,
    certDir,
    serving,
  });
  return {
    etcd: new Component({ name: 'etcd', binary: settings.etcdBinary, args: etcdArgs, dir, log, launcher }),
    apiserver: new Component({
      name: 'kube-apiserver',
      binary: bin('kube-apiserver'),
      args: apiServerArgs,
      dir,
      log,
      launcher,
      stopGraceMs: APISERVER_STOP_GRACE_MS,
    }),
    controllerManager: new Component({
      name: 'kube-controller-manager',
      binary: bin('kube-controller-manager'),
      args: controllerManagerArgs,
      dir,
      log,
      launcher,
    }),
    scheduler: new Component({
      name: 'kube-scheduler',
      binary: bin('kube-scheduler'),
      args: schedulerArgs,
      dir,
      log,
      launcher,
    }),
  };
}
