/**
 * The command lines of etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler v1.20, as pure functions of the paths and ports they use.
 * Every listener is on 127.0.0.1.
 */
import type { CertificateFiles, ServiceAccountKeys } from './pki.ts';

/** The Service IP range; the first address is the `kubernetes` Service's, which the serving certificate names. */
export const SERVICE_CIDR = '10.0.0.0/24';
export const SERVICE_IP = '10.0.0.1';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

export interface EtcdFlagInputs {
  dataDir: string;
  clientPort: number;
  peerPort: number;
}

/** A single-member etcd cluster named `svk`, plain HTTP on loopback, logging to stderr. */
export function etcdFlags(inputs: EtcdFlagInputs): string[] {
  const peer = `http://127.0.0.1:${inputs.peerPort}`;
  const client = `http://127.0.0.1:${inputs.clientPort}`;
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

export interface ApiServerFlagInputs {
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
}

/** TLS only, token authentication, `Node,RBAC` authorization, service-account tokens signed by our key. */
export function apiServerFlags(inputs: ApiServerFlagInputs): string[] {
  return [
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${inputs.port}`,
    '--insecure-port=0',
    `--etcd-servers=http://127.0.0.1:${inputs.etcdClientPort}`,
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

export interface ControllerManagerFlagInputs {
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

export interface SchedulerFlagInputs {
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
function secureServingFlags(inputs: { port: number; certDir: string; serving: CertificateFiles }): string[] {
  return [
    '--bind-address=127.0.0.1',
    `--secure-port=${inputs.port}`,
    '--port=0',
    `--tls-cert-file=${inputs.serving.cert}`,
    `--tls-private-key-file=${inputs.serving.key}`,
    `--cert-dir=${inputs.certDir}`,
  ];
}
