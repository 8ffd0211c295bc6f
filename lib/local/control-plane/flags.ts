/**
 * The command lines of etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler v1.20, as pure functions of the paths and ports they use.
 * Every listener is on one address: 127.0.0.1 unless `address` says
 * otherwise (a control plane in a network namespace of its own).
 */
import type { CertificateFiles, ServiceAccountKeys } from './pki.ts';

/** The Service IP range; the first address is the `kubernetes` Service's, which the serving certificate names. */
export const SERVICE_CIDR = '10.0.0.0/24';
export const SERVICE_IP = '10.0.0.1';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
export const LOOPBACK = '127.0.0.1';

/** Where the components listen; default {@link LOOPBACK}. */
interface Listening {
  address?: string;
}

export interface EtcdFlagInputs extends Listening {
  dataDir: string;
  clientPort: number;
  peerPort: number;
}

/** A single-member etcd cluster named `svk`, plain HTTP on loopback, logging to stderr. */
export function etcdFlags(inputs: EtcdFlagInputs): string[] {
  const address = inputs.address ?? LOOPBACK;
  const peer = `http://${address}:${inputs.peerPort}`;
  const client = `http://${address}:${inputs.clientPort}`;
  return [
    '--name=svk',
    `--data-dir=${inputs.dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=svk=${peer}`,
    '--initial-cluster-state=new',
    '--logger=zap',
    '--log-outputs=stderr',
  ];
}

export interface ApiServerFlagInputs extends Listening {
  port: number;
  etcdClientPort: number;
  /** Where it may write self-signed certificates it needs; ours are given explicitly. */
  certDir: string;
  serving: CertificateFiles;
  /** Verifies client certificates, and the serving certificates of kubelets. */
  caCert: string;
  /** How it authenticates to kubelets (the kubelet API of our nodes). */
  kubeletClient: CertificateFiles;
  tokenFile: string;
  serviceAccount: ServiceAccountKeys;
  /** Appended after ours, so that a repeated single-valued flag overrides ours. */
  extraArgs?: readonly string[];
  /**
   * Where it listens when not only on `address`: `0.0.0.0` for pods on an engine's bridge, whose host
   * address exists only while a container is attached to it, so it cannot be bound on its own.
   */
  bindAddress?: string;
}

/** TLS only, token authentication, `Node,RBAC` authorization, service-account tokens signed by our key. */
export function apiServerFlags(inputs: ApiServerFlagInputs): string[] {
  const address = inputs.address ?? LOOPBACK;
  return [
    `--bind-address=${inputs.bindAddress ?? address}`,
    `--advertise-address=${address}`,
    `--secure-port=${inputs.port}`,
    '--insecure-port=0',
    `--etcd-servers=http://${address}:${inputs.etcdClientPort}`,
    `--cert-dir=${inputs.certDir}`,
    `--tls-cert-file=${inputs.serving.cert}`,
    `--tls-private-key-file=${inputs.serving.key}`,
    `--client-ca-file=${inputs.caCert}`,
    `--token-auth-file=${inputs.tokenFile}`,
    `--kubelet-client-certificate=${inputs.kubeletClient.cert}`,
    `--kubelet-client-key=${inputs.kubeletClient.key}`,
    // The local kubelet API serves a certificate this CA signed, so it can be verified.
    `--kubelet-certificate-authority=${inputs.caCert}`,
    '--authorization-mode=Node,RBAC',
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${inputs.serviceAccount.publicKey}`,
    `--service-account-signing-key-file=${inputs.serviceAccount.privateKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    // The `kubernetes` Service would need a non-loopback endpoint address; nothing runs in-cluster here.
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
    '--profiling=false',
    ...(inputs.extraArgs ?? []),
  ];
}

export interface ControllerManagerFlagInputs extends Listening {
  port: number;
  kubeconfig: string;
  certDir: string;
  serving: CertificateFiles;
  /** The CA signs CSRs (`--cluster-signing-*`) and is handed to pods as the root CA. */
  ca: CertificateFiles;
  serviceAccountPrivateKey: string;
}

/** Every controller, one instance without leader election, service-account credentials per controller. */
export function controllerManagerFlags(inputs: ControllerManagerFlagInputs): string[] {
  return [
    `--kubeconfig=${inputs.kubeconfig}`,
    ...secureServingFlags(inputs),
    // One instance: leader election only slows start-up and makes it exit when the API server is away.
    '--leader-elect=false',
    '--controllers=*',
    `--service-account-private-key-file=${inputs.serviceAccountPrivateKey}`,
    `--root-ca-file=${inputs.ca.cert}`,
    '--use-service-account-credentials=true',
    `--cluster-signing-cert-file=${inputs.ca.cert}`,
    `--cluster-signing-key-file=${inputs.ca.key}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--profiling=false',
    // v=2 logs the node lifecycle controller's decisions about our nodes.
    '--v=2',
  ];
}

export interface SchedulerFlagInputs extends Listening {
  port: number;
  kubeconfig: string;
  certDir: string;
  serving: CertificateFiles;
}

/** The default scheduler, one instance without leader election. */
export function schedulerFlags(inputs: SchedulerFlagInputs): string[] {
  return [
    `--kubeconfig=${inputs.kubeconfig}`,
    ...secureServingFlags(inputs),
    '--leader-elect=false',
    '--profiling=false',
  ];
}

/** /healthz over TLS on `port` with our serving certificate; the insecure port off. */
function secureServingFlags(
  inputs: Listening & { port: number; certDir: string; serving: CertificateFiles },
): string[] {
  return [
    `--bind-address=${inputs.address ?? LOOPBACK}`,
    `--secure-port=${inputs.port}`,
    '--port=0',
    `--tls-cert-file=${inputs.serving.cert}`,
    `--tls-private-key-file=${inputs.serving.key}`,
    `--cert-dir=${inputs.certDir}`,
  ];
}
