/**
 * Every secret one start of the control plane needs, written into its
 * directory: a fresh CA, one serving certificate shared by kube-apiserver,
 * kube-controller-manager and kube-scheduler, the service-account key pair,
 * and five identities, each with a bearer token in the API server's static
 * token file (`--token-auth-file`) and a kubeconfig of its own.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dumpYaml } from '@kubernetes/client-node';
import { SERVICE_IP } from './flags.ts';
import {
  CertificateAuthority,
  type CertificateFiles,
  type ServiceAccountKeys,
  writeServiceAccountKeys,
} from './pki.ts';

/** Every certificate, key and token of one start. */
export interface Credentials {
  /** The API server's URL, which the kubeconfigs point at. */
  server: string;
  /** Issues further certificates (a client certificate for a component, say). */
  ca: CertificateAuthority;
  /** The CA certificate's PEM, which every client verifies the servers against. */
  caPem: Buffer;
  /** One serving certificate shared by kube-apiserver, kube-controller-manager and kube-scheduler. */
  serving: CertificateFiles;
  /** kube-apiserver's client certificate for kubelets (kubeadm's `apiserver-kubelet-client`). */
  kubeletClient: CertificateFiles;
  serviceAccount: ServiceAccountKeys;
  identities: Identities;
}

/** What a client may call the servers: loopback, and the in-cluster names of the `kubernetes` Service. */
const SERVING_ALT_NAMES = [
  'IP:127.0.0.1',
  'DNS:localhost',
  `IP:${SERVICE_IP}`,
  'DNS:kubernetes',
  'DNS:kubernetes.default',
  'DNS:kubernetes.default.svc',
  'DNS:kubernetes.default.svc.cluster.local',
];

/**
 * Writes the CA and certificates into `dir/certs`, the token file and
 * kubeconfigs into `dir`, for an API server at `address:port` (the serving
 * certificate names that address besides loopback, and `podAddresses`,
 * where pods reach it).
 */
export async function writeCredentials(
  dir: string,
  address: string,
  port: number,
  podAddresses: readonly string[] = [],
): Promise<Credentials> {
  const server = `https://${address}:${port}`;
  const certDir = join(dir, 'certs');
  const ca = await CertificateAuthority.create(certDir);
  const serving = await ca.issue('serving', {
    commonName: 'svk-local-kube',
    usage: 'server',
    altNames: [...new Set([`IP:${address}`, ...podAddresses.map((a) => `IP:${a}`), ...SERVING_ALT_NAMES])],
  });
  const kubeletClient = await ca.issue('apiserver-kubelet-client', {
    commonName: 'kube-apiserver-kubelet-client',
    organizations: ['system:masters'],
    usage: 'client',
  });
  const serviceAccount = writeServiceAccountKeys(certDir);
  const caPem = readFileSync(ca.cert);
  const identities = writeIdentities(dir, server, caPem);
  return { server, ca, caPem, serving, kubeletClient, serviceAccount, identities };
}

/** The control loop's identity `infra/rbac.yaml` binds; kubelet.kubeconfig authenticates as it. */
export const KUBELET_USER = 'serverless-virtual-kubelet';
export const KUBELET_GROUP = 'serverless-virtual-kubelet';
/** The kubelet API's own identity `infra/rbac.yaml` binds; kubelet-api.kubeconfig authenticates as it. */
export const KUBELET_API_USER = 'serverless-virtual-kubelet-kubelet-api';
export const KUBELET_API_GROUP = 'serverless-virtual-kubelet-kubelet-api';
/**
 * The control-loop functions with a user of their own, `serverless-virtual-kubelet:<function>`,
 * bound by `infra/rbac.yaml` to what that function calls (the tick's to its four parts' roles),
 * as EKS access entries map each function's role; each gets a kubeconfig, `function-<name>.kubeconfig`.
 */
export const FUNCTION_USERS = [
  'tick',
  'heartbeat',
  'pod-watch',
  'pod-sync',
  'pod-status',
  'reconcile',
  'ecs-task-state',
] as const;
export type FunctionUser = (typeof FUNCTION_USERS)[number];

/** The user `infra/rbac.yaml` binds for a control-loop function. */
export function functionUser(fn: string): string {
  return `${KUBELET_USER}:${fn}`;
}

interface Identity {
  user: string;
  groups: readonly string[];
  /** File name of its kubeconfig. */
  file: string;
}

const ADMIN: Identity = { user: 'svk-admin', groups: ['system:masters'], file: 'admin.kubeconfig' };
const KUBELET: Identity = { user: KUBELET_USER, groups: [KUBELET_GROUP], file: 'kubelet.kubeconfig' };
const KUBELET_API: Identity = {
  user: KUBELET_API_USER,
  groups: [KUBELET_API_GROUP],
  file: 'kubelet-api.kubeconfig',
};
const CONTROLLER_MANAGER: Identity = {
  user: 'system:kube-controller-manager',
  groups: [],
  file: 'controller-manager.kubeconfig',
};
const SCHEDULER: Identity = { user: 'system:kube-scheduler', groups: [], file: 'scheduler.kubeconfig' };

export interface Identities {
  /** `tokens.csv`. */
  tokenFile: string;
  /** The admin's bearer token, for probes that need authentication. */
  adminToken: string;
  /** Paths of the kubeconfigs. `admin` is in `system:masters`: test set-up and assertions only. */
  kubeconfigs: {
    admin: string;
    kubelet: string;
    kubeletApi: string;
    controllerManager: string;
    scheduler: string;
    /** Each control-loop function's own user (no group, as an EKS access entry maps it). */
    functions: Record<FunctionUser, string>;
  };
}

/** Writes `tokens.csv` and the kubeconfigs (five, and one per control-loop function) into `dir`, with fresh random tokens. */
function writeIdentities(dir: string, server: string, ca: Buffer): Identities {
  const issue = (identity: Identity) => ({
    identity,
    token: randomBytes(24).toString('hex'),
    kubeconfig: join(dir, identity.file),
  });
  const admin = issue(ADMIN);
  const controllerManager = issue(CONTROLLER_MANAGER);
  const scheduler = issue(SCHEDULER);
  const kubelet = issue(KUBELET);
  const kubeletApi = issue(KUBELET_API);
  const functions = FUNCTION_USERS.map((fn) => ({
    fn,
    ...issue({ user: functionUser(fn), groups: [], file: `function-${fn}.kubeconfig` }),
  }));
  const all = [admin, controllerManager, scheduler, kubelet, kubeletApi, ...functions];
  const tokenFile = join(dir, 'tokens.csv');
  const lines = all.map(({ identity, token }) => tokenLine(identity, token));
  writeFileSync(tokenFile, [...lines, ''].join('\n'), { mode: 0o600 });
  for (const { identity, token, kubeconfig } of all)
    writeKubeconfig(kubeconfig, server, ca, identity.user, token);
  return {
    tokenFile,
    adminToken: admin.token,
    kubeconfigs: {
      admin: admin.kubeconfig,
      kubelet: kubelet.kubeconfig,
      kubeletApi: kubeletApi.kubeconfig,
      controllerManager: controllerManager.kubeconfig,
      scheduler: scheduler.kubeconfig,
      functions: Object.fromEntries(functions.map((f) => [f.fn, f.kubeconfig])) as Record<
        FunctionUser,
        string
      >,
    },
  };
}

/** `token,user,uid[,"group1,group2"]`: the static token file's CSV, the user name doubling as uid. */
function tokenLine(identity: Identity, token: string): string {
  const groups = identity.groups.length > 0 ? `,"${identity.groups.join(',')}"` : '';
  return `${token},${identity.user},${identity.user}${groups}`;
}

function writeKubeconfig(path: string, server: string, ca: Buffer, user: string, token: string): void {
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
}
