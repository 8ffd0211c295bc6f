import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  apiServerFlags,
  controllerManagerFlags,
  etcdFlags,
  SERVICE_CIDR,
  schedulerFlags,
} from '../../lib/local/control-plane/flags.ts';

const serving = { cert: '/cp/certs/serving.crt', key: '/cp/certs/serving.key' };
const ca = { cert: '/cp/certs/ca.crt', key: '/cp/certs/ca.key' };
const serviceAccount = { privateKey: '/cp/certs/sa.key', publicKey: '/cp/certs/sa.pub' };
const kubeletClient = {
  cert: '/cp/certs/apiserver-kubelet-client.crt',
  key: '/cp/certs/apiserver-kubelet-client.key',
};

/** The value of `--name=value` flags, and every occurrence for repeated ones. */
function values(args: string[], name: string): string[] {
  return args.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
}

function apiServer(extraArgs?: string[]) {
  return apiServerFlags({
    port: 6443,
    etcdClientPort: 2379,
    certDir: '/cp/certs',
    serving,
    caCert: ca.cert,
    kubeletClient,
    tokenFile: '/cp/tokens.csv',
    serviceAccount,
    ...(extraArgs ? { extraArgs } : {}),
  });
}

describe('control-plane flags', () => {
  it('etcd: one member named svk on the given loopback ports, data in the given directory', () => {
    const args = etcdFlags({ dataDir: '/cp/etcd', clientPort: 2379, peerPort: 2380 });
    assert.deepEqual(values(args, 'data-dir'), ['/cp/etcd']);
    assert.deepEqual(values(args, 'listen-client-urls'), ['http://127.0.0.1:2379']);
    assert.deepEqual(values(args, 'advertise-client-urls'), ['http://127.0.0.1:2379']);
    assert.deepEqual(values(args, 'listen-peer-urls'), ['http://127.0.0.1:2380']);
    assert.deepEqual(values(args, 'initial-cluster'), ['svk=http://127.0.0.1:2380']);
    assert.deepEqual(values(args, 'initial-cluster-state'), ['new']);
  });

  it('kube-apiserver: TLS only on loopback, our etcd, token authentication and Node,RBAC', () => {
    const args = apiServer();
    assert.deepEqual(values(args, 'bind-address'), ['127.0.0.1']);
    assert.deepEqual(values(args, 'secure-port'), ['6443']);
    assert.deepEqual(values(args, 'insecure-port'), ['0']);
    assert.deepEqual(values(args, 'etcd-servers'), ['http://127.0.0.1:2379']);
    assert.deepEqual(values(args, 'tls-cert-file'), [serving.cert]);
    assert.deepEqual(values(args, 'tls-private-key-file'), [serving.key]);
    assert.deepEqual(values(args, 'client-ca-file'), [ca.cert]);
    assert.deepEqual(values(args, 'token-auth-file'), ['/cp/tokens.csv']);
    assert.deepEqual(values(args, 'authorization-mode'), ['Node,RBAC']);
    assert.deepEqual(values(args, 'service-account-key-file'), [serviceAccount.publicKey]);
    assert.deepEqual(values(args, 'service-account-signing-key-file'), [serviceAccount.privateKey]);
    assert.deepEqual(values(args, 'service-cluster-ip-range'), [SERVICE_CIDR]);
  });

  it('kube-apiserver: reaches kubelets with its own client certificate and verifies them against the CA', () => {
    const args = apiServer();
    assert.deepEqual(values(args, 'kubelet-client-certificate'), [kubeletClient.cert]);
    assert.deepEqual(values(args, 'kubelet-client-key'), [kubeletClient.key]);
    assert.deepEqual(values(args, 'kubelet-certificate-authority'), [ca.cert]);
  });

  it('kube-apiserver: extra flags come after ours, so a repeated single-valued flag overrides ours', () => {
    const extra = ['--runtime-config=coordination.k8s.io/v1=false', '--authorization-mode=RBAC'];
    const args = apiServer(extra);
    assert.deepEqual(args.slice(-2), extra);
    assert.deepEqual(args.slice(0, -2), apiServer());
    assert.equal(values(args, 'authorization-mode').at(-1), 'RBAC');
  });

  it('kube-controller-manager: its kubeconfig, one instance, CSRs signed and pods given the root CA by our CA', () => {
    const args = controllerManagerFlags({
      port: 10257,
      kubeconfig: '/cp/controller-manager.kubeconfig',
      certDir: '/cp/certs',
      serving,
      ca,
      serviceAccountPrivateKey: serviceAccount.privateKey,
    });
    assert.deepEqual(values(args, 'kubeconfig'), ['/cp/controller-manager.kubeconfig']);
    assert.deepEqual(values(args, 'bind-address'), ['127.0.0.1']);
    assert.deepEqual(values(args, 'secure-port'), ['10257']);
    assert.deepEqual(values(args, 'port'), ['0']);
    assert.deepEqual(values(args, 'tls-cert-file'), [serving.cert]);
    assert.deepEqual(values(args, 'leader-elect'), ['false']);
    assert.deepEqual(values(args, 'controllers'), ['*']);
    assert.deepEqual(values(args, 'cluster-signing-cert-file'), [ca.cert]);
    assert.deepEqual(values(args, 'cluster-signing-key-file'), [ca.key]);
    assert.deepEqual(values(args, 'root-ca-file'), [ca.cert]);
    assert.deepEqual(values(args, 'service-account-private-key-file'), [serviceAccount.privateKey]);
    assert.deepEqual(values(args, 'use-service-account-credentials'), ['true']);
  });

  it('kube-scheduler: its kubeconfig, one instance, /healthz over TLS on the given port', () => {
    const args = schedulerFlags({
      port: 10259,
      kubeconfig: '/cp/scheduler.kubeconfig',
      certDir: '/cp/certs',
      serving,
    });
    assert.deepEqual(values(args, 'kubeconfig'), ['/cp/scheduler.kubeconfig']);
    assert.deepEqual(values(args, 'bind-address'), ['127.0.0.1']);
    assert.deepEqual(values(args, 'secure-port'), ['10259']);
    assert.deepEqual(values(args, 'port'), ['0']);
    assert.deepEqual(values(args, 'tls-cert-file'), [serving.cert]);
    assert.deepEqual(values(args, 'tls-private-key-file'), [serving.key]);
    assert.deepEqual(values(args, 'leader-elect'), ['false']);
  });

  it('every flag is a single --name=value word, with no empty value', () => {
    const all = [
      etcdFlags({ dataDir: '/cp/etcd', clientPort: 1, peerPort: 2 }),
      apiServer(),
      controllerManagerFlags({
        port: 3,
        kubeconfig: '/k',
        certDir: '/c',
        serving,
        ca,
        serviceAccountPrivateKey: '/s',
      }),
      schedulerFlags({ port: 4, kubeconfig: '/k', certDir: '/c', serving }),
    ].flat();
    for (const arg of all) assert.match(arg, /^--[a-z0-9-]+=\S+$/);
  });
});
