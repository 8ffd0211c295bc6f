import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { hostnameProblem, podHostname } from '../../lib/provider/docker/pod-hostname.ts';

const pod = (name: string, spec: Partial<NonNullable<V1Pod['spec']>>): V1Pod => ({
  metadata: { namespace: 'shop', name, uid: 'u' },
  spec: { containers: [], ...spec },
});

describe('docker provider: a pod hostname and domain, as the kubelet derives them', () => {
  it("gives a StatefulSet's pod its hostname in <subdomain>.<namespace>.svc.<cluster domain>", () => {
    assert.deepEqual(podHostname(pod('web-0', { hostname: 'web-0', subdomain: 'web' }), 'cluster.local'), {
      hostname: 'web-0',
      domainname: 'web.shop.svc.cluster.local',
      fqdn: 'web-0.web.shop.svc.cluster.local',
    });
    // Without spec.hostname the pod name is the hostname, in the subdomain all the same.
    assert.deepEqual(podHostname(pod('db-1', { subdomain: 'db' }), 'corp.internal'), {
      hostname: 'db-1',
      domainname: 'db.shop.svc.corp.internal',
      fqdn: 'db-1.db.shop.svc.corp.internal',
    });
  });

  it('makes the FQDN the hostname with setHostnameAsFQDN, and needs a subdomain for it', () => {
    assert.deepEqual(
      podHostname(
        pod('web-0', { hostname: 'web-0', subdomain: 'web', setHostnameAsFQDN: true }),
        'cluster.local',
      ),
      { hostname: 'web-0.web.shop.svc.cluster.local', fqdn: 'web-0.web.shop.svc.cluster.local' },
    );
    assert.deepEqual(podHostname(pod('web-0', { setHostnameAsFQDN: true }), 'cluster.local'), {
      hostname: 'web-0',
    });
  });

  it('gives hostnameOverride precedence over hostname and subdomain: no domain, so no FQDN to set', () => {
    assert.deepEqual(
      podHostname(
        pod('web-0', {
          hostname: 'web-0',
          subdomain: 'web',
          setHostnameAsFQDN: true,
          hostnameOverride: 'box.example.com',
        }),
        'cluster.local',
      ),
      { hostname: 'box.example.com' },
    );
  });

  it('cuts a long pod name to 63 characters without a trailing - or ., as the kubelet does', () => {
    const name = `${'a'.repeat(61)}-.b-c`;
    assert.equal(podHostname(pod(name, {}), 'cluster.local').hostname, 'a'.repeat(61));
    assert.equal(podHostname(pod('a'.repeat(70), {}), 'cluster.local').hostname, 'a'.repeat(63));
  });

  it('refuses an FQDN longer than the 64 characters of a Linux hostname, as the hostname only', () => {
    const statefulSet = pod('p', { hostname: 'abcdefgh-0', subdomain: 'svc-name', setHostnameAsFQDN: true });
    // 'abcdefgh-0.svc-name.shop.svc.' is 29 characters: a 35-character cluster domain makes 64.
    const clusterDomain = (length: number) => `${'c'.repeat(length - 6)}.local`;
    assert.equal(podHostname(statefulSet, clusterDomain(35)).hostname.length, 64);
    assert.equal(hostnameProblem(statefulSet, clusterDomain(35)), undefined);
    const fqdn = podHostname(statefulSet, clusterDomain(36)).hostname;
    assert.equal(fqdn.length, 65);
    assert.equal(
      hostnameProblem(statefulSet, clusterDomain(36)),
      `spec.setHostnameAsFQDN: the FQDN ${fqdn} is 65 characters, and a hostname holds at most 64 (the kubelet refuses it too)`,
    );
    const shortHostname = {
      ...statefulSet,
      spec: { containers: [], ...statefulSet.spec, setHostnameAsFQDN: false },
    };
    assert.equal(hostnameProblem(shortHostname, clusterDomain(36)), undefined);
  });
});
