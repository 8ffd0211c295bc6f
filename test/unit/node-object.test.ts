import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { loadConfig } from '../../lib/config/load-config.ts';
import {
  metadataPatch,
  registrationNode,
  reportFingerprint,
  statusApplyBody,
} from '../../lib/node/node-object.ts';
import { HEALTHY_CONDITIONS } from '../../lib/provider/mock/mock-node.ts';
import type { ProviderNodeStatus } from '../../lib/provider/provider.ts';

const settings = loadConfig({ SVK_NODE_LABELS: 'team=infra', SVK_NODE_INTERNAL_IP: '10.1.2.3' }).node;
const report: ProviderNodeStatus = {
  capacity: { cpu: '4', pods: '10' },
  conditions: HEALTHY_CONDITIONS,
  nodeInfo: { kubeletVersion: 'v1.20.2', operatingSystem: 'linux', architecture: 'amd64', osImage: 'mock' },
};

describe('node objects', () => {
  it('registers with the virtual-kubelet labels, configured labels and the provider taint', () => {
    const node = registrationNode('vk-1', settings);
    assert.equal(node.metadata?.labels?.type, 'virtual-kubelet');
    assert.equal(node.metadata?.labels?.['kubernetes.io/role'], 'agent');
    assert.equal(node.metadata?.labels?.['kubernetes.io/os'], 'linux');
    assert.equal(node.metadata?.labels?.team, 'infra');
    assert.deepEqual(node.spec?.taints, [
      { key: 'virtual-kubelet.io/provider', value: 'mock', effect: 'NoSchedule' },
    ]);
    assert.equal(node.status, undefined, 'status is applied separately');
  });

  it("labels kubernetes.io/arch with the provider's nodeInfo.architecture, as a real kubelet does", () => {
    const node = registrationNode('vk-1', settings, report.nodeInfo.architecture);
    assert.equal(node.metadata?.labels?.['kubernetes.io/arch'], 'amd64');
    assert.equal(registrationNode('vk-1', settings).metadata?.labels?.['kubernetes.io/arch'], undefined);
    // A Node registered before the provider reported gets the label once it does, and keeps it.
    const early = registrationNode('vk-1', settings);
    const patch = metadataPatch('vk-1', settings, early, 'arm64') as {
      metadata: { labels?: Record<string, string | null> };
    };
    assert.deepEqual(patch.metadata.labels, { 'kubernetes.io/arch': 'arm64' });
    const labelled = registrationNode('vk-1', settings, 'arm64');
    assert.equal(metadataPatch('vk-1', settings, labelled, 'arm64'), undefined, 'nothing to change');
  });

  it('writes capacity, addresses, daemon endpoint and a fresh heartbeat', () => {
    const now = new Date('2026-11-21T05:00:00Z');
    const body = statusApplyBody({ name: 'vk-1', settings, report, now });
    assert.deepEqual(body.status?.capacity, { cpu: '4', pods: '10' });
    assert.deepEqual(body.status?.allocatable, { cpu: '4', pods: '10' });
    assert.deepEqual(body.status?.addresses, [
      { type: 'InternalIP', address: '10.1.2.3' },
      { type: 'Hostname', address: 'vk-1' },
    ]);
    assert.equal(body.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);
    for (const c of body.status?.conditions ?? []) {
      assert.equal(c.lastHeartbeatTime, now);
      assert.equal(c.lastTransitionTime, now);
    }
  });

  it('keeps lastTransitionTime while a condition keeps its status, and moves it on a change', () => {
    const then = new Date('2026-11-21T04:00:00Z');
    const now = new Date('2026-11-21T05:00:00Z');
    const current: V1Node = {
      status: {
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: then },
          { type: 'MemoryPressure', status: 'True', lastTransitionTime: then },
        ],
      },
    };
    const body = statusApplyBody({ name: 'vk-1', settings, report, current, now });
    const byType = new Map((body.status?.conditions ?? []).map((c) => [c.type, c]));
    assert.equal(byType.get('Ready')?.lastTransitionTime, then);
    assert.equal(byType.get('MemoryPressure')?.lastTransitionTime, now);
    assert.equal(byType.get('DiskPressure')?.lastTransitionTime, now);
  });

  it('a failing ping turns Ready False with a reason and message', () => {
    const body = statusApplyBody({
      name: 'vk-1',
      settings,
      report,
      pingError: 'backend down',
      now: new Date(),
    });
    const ready = body.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'ProviderPingFailed');
    assert.match(ready?.message ?? '', /backend down/);
  });

  it('the report fingerprint changes with the ping result and conditions, not with time', () => {
    const a = reportFingerprint(report, undefined);
    assert.equal(a, reportFingerprint({ ...report }, undefined));
    assert.notEqual(a, reportFingerprint(report, 'down'));
    assert.notEqual(a, reportFingerprint({ ...report, conditions: report.conditions.slice(1) }, undefined));
  });
});
