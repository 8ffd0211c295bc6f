/**
 * Where the local kubelet API listens for a cluster `npm start` joined, for
 * the shapes such clusters take: kubeadm on this host, kind/k3d/minikube
 * behind a port-forward (API server in a container on an engine bridge), a
 * VM or a remote cluster, and the override.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../lib/config/config.ts';
import {
  type ApiServerWhereabouts,
  chooseKubeletApiAddress,
} from '../../lib/local/kubelet-api/address-choice.ts';
import { joinedKubeletApiSettingsFromEnv } from '../../lib/local/kubelet-api/joined-cluster.ts';

const host = [
  { address: '127.0.0.1', device: 'lo' },
  { address: '192.168.1.20', device: 'eth0' },
  { address: '172.18.0.1', device: 'br-5e1f' },
];
const kindBridge = { source: '172.18.0.1', device: 'br-5e1f', bridge: true };

function where(facts: Partial<ApiServerWhereabouts>): ApiServerWhereabouts {
  return { advertised: [], kubeconfig: [], host, routes: {}, ...facts };
}

describe('the local kubelet API address for a joined cluster', () => {
  it('kind, k3d, minikube: a loopback port-forward, the API server advertising its container address: the bridge address', () => {
    const choice = chooseKubeletApiAddress(
      where({ kubeconfig: ['127.0.0.1'], advertised: ['172.18.0.2'], routes: { '172.18.0.2': kindBridge } }),
    );
    assert.deepEqual(choice, {
      kind: 'address',
      address: '172.18.0.1',
      reason:
        "the API server advertises 172.18.0.2; the host's address on bridge br-5e1f: it runs in a container",
    });
  });

  it('kubeadm on this host: the API server advertising one of this host’s addresses runs here: loopback', () => {
    const choice = chooseKubeletApiAddress(
      where({ kubeconfig: ['192.168.1.20'], advertised: ['192.168.1.20'] }),
    );
    assert.equal(choice.kind, 'loopback');
    assert.match(choice.reason, /192\.168\.1\.20, this host's address on eth0: it runs here/);
  });

  it('an API server that advertises nothing (endpoint reconciler off) behind a loopback kubeconfig: loopback, saying what a port-forward needs', () => {
    const choice = chooseKubeletApiAddress(where({ kubeconfig: ['127.0.0.1'] }));
    assert.equal(choice.kind, 'loopback');
    assert.match(choice.reason, /kubeconfig's server is at 127\.0\.0\.1.*SVK_LOCAL_KUBELET_API_ADDRESS/);
  });

  it('a VM or a remote cluster: the host’s address on the route to it, not a bridge', () => {
    const choice = chooseKubeletApiAddress(
      where({
        kubeconfig: ['10.20.0.5'],
        routes: { '10.20.0.5': { source: '192.168.1.20', device: 'eth0', bridge: false } },
      }),
    );
    assert.deepEqual(choice, {
      kind: 'address',
      address: '192.168.1.20',
      reason: "the kubeconfig's server is at 10.20.0.5; the host's address on the route to it (eth0)",
    });
  });

  it('prefers the advertised address to the kubeconfig’s, and IPv4 among several', () => {
    const choice = chooseKubeletApiAddress(
      where({
        kubeconfig: ['192.168.1.20'],
        advertised: ['fd00::2', '172.18.0.2'],
        routes: { '172.18.0.2': kindBridge },
      }),
    );
    assert.equal(choice.kind === 'address' && choice.address, '172.18.0.1');
  });

  it('the override wins, and must be an IPv4 address of this host', () => {
    const facts = {
      kubeconfig: ['127.0.0.1'],
      advertised: ['172.18.0.2'],
      routes: { '172.18.0.2': kindBridge },
    };
    assert.deepEqual(chooseKubeletApiAddress(where({ ...facts, override: '192.168.1.20' })), {
      kind: 'address',
      address: '192.168.1.20',
      reason: 'SVK_LOCAL_KUBELET_API_ADDRESS',
    });
    assert.equal(chooseKubeletApiAddress(where({ ...facts, override: '127.0.0.1' })).kind, 'loopback');
    const elsewhere = chooseKubeletApiAddress(where({ ...facts, override: '10.9.9.9' }));
    assert.deepEqual(elsewhere, {
      kind: 'none',
      reason: 'SVK_LOCAL_KUBELET_API_ADDRESS=10.9.9.9 is no address of this host',
    });
    assert.match(chooseKubeletApiAddress(where({ ...facts, override: 'host.local' })).reason, /not an IPv4/);
  });

  it('says what to set when nothing tells where the API server is, or no route leads there', () => {
    const nothing = chooseKubeletApiAddress(where({}));
    assert.equal(nothing.kind, 'none');
    assert.match(nothing.reason, /set SVK_LOCAL_KUBELET_API_ADDRESS/);
    const unrouted = chooseKubeletApiAddress(where({ advertised: ['10.20.0.5'] }));
    assert.deepEqual(unrouted, {
      kind: 'none',
      reason:
        'the API server advertises 10.20.0.5 and this host has no route to it: set SVK_LOCAL_KUBELET_API_ADDRESS',
    });
    assert.equal(chooseKubeletApiAddress(where({ advertised: ['fd00::5'] })).kind, 'none');
  });
});

describe("npm start's kubelet API variables", () => {
  it('reads the override address and the client CA source, and names each bad value', () => {
    assert.deepEqual(joinedKubeletApiSettingsFromEnv({}), { clientCa: { kind: 'kubeconfig' } });
    assert.deepEqual(
      joinedKubeletApiSettingsFromEnv({
        SVK_LOCAL_KUBELET_API_ADDRESS: ' 172.18.0.1 ',
        SVK_LOCAL_KUBELET_API_CLIENT_CA: 'cluster',
      }),
      { address: '172.18.0.1', clientCa: { kind: 'cluster' } },
    );
    assert.deepEqual(joinedKubeletApiSettingsFromEnv({ SVK_LOCAL_KUBELET_API_CLIENT_CA: '/etc/hostname' }), {
      clientCa: { kind: 'file', path: '/etc/hostname' },
    });
    assert.throws(
      () =>
        joinedKubeletApiSettingsFromEnv({
          SVK_LOCAL_KUBELET_API_ADDRESS: 'my-host',
          SVK_LOCAL_KUBELET_API_CLIENT_CA: '/nonexistent/ca.pem',
        }),
      (err) =>
        err instanceof ConfigError &&
        err.issues.some((i) => i.variable === 'SVK_LOCAL_KUBELET_API_ADDRESS' && /IPv4/.test(i.message)) &&
        err.issues.some((i) => i.variable === 'SVK_LOCAL_KUBELET_API_CLIENT_CA' && /no file/.test(i.message)),
    );
  });
});
