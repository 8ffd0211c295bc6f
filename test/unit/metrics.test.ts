/** The CloudWatch Embedded Metric Format lines the functions write, and the provider error counter. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodEventDetail } from '../../lib/events/pod-event.ts';
import { PodEventPublisher, PublishError } from '../../lib/events/publisher.ts';
import { EmfMetrics, METRICS } from '../../lib/metrics/emf.ts';
import { withPodProviderMetrics } from '../../lib/metrics/provider-metrics.ts';
import { type PodProvider, ProviderNotFoundError } from '../../lib/provider/provider.ts';

function recorder(options: { perNode?: boolean; service?: string } = {}) {
  const lines: string[] = [];
  const metrics = new EmfMetrics({
    deployment: 'svk-prod',
    now: () => 1_700_000_000_000,
    write: (line) => lines.push(line),
    ...options,
  });
  const docs = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { metrics, lines, docs };
}

describe('EMF metrics', () => {
  it('writes one JSON line per data point in the EMF shape, per node and per deployment', () => {
    const { metrics, lines, docs } = recorder();
    metrics.leaseRenewalLag('vk-1', 10_012.4);
    assert.equal(lines.length, 1);
    assert.ok(lines[0]?.endsWith('}\n') && !lines[0].slice(0, -1).includes('\n'), 'one line');
    assert.deepEqual(docs()[0], {
      _aws: {
        Timestamp: 1_700_000_000_000,
        CloudWatchMetrics: [
          {
            Namespace: 'ServerlessVirtualKubelet',
            Dimensions: [
              ['Deployment', 'service', 'Node'],
              ['Deployment', 'service'],
            ],
            Metrics: [{ Name: 'LeaseRenewalLag', Unit: 'Milliseconds' }],
          },
        ],
      },
      Deployment: 'svk-prod',
      service: 'serverless-virtual-kubelet',
      Node: 'vk-1',
      LeaseRenewalLag: 10_012,
    });
  });

  it('keeps the node as a property only, when per-node metrics are off', () => {
    const { metrics, docs } = recorder({ perNode: false });
    metrics.leaseRenewalLag('vk-1', 5);
    const doc = docs()[0] as { _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][] }> }; Node: string };
    assert.deepEqual(doc._aws.CloudWatchMetrics[0]?.Dimensions, [['Deployment', 'service']]);
    assert.equal(doc.Node, 'vk-1');
  });

  it('every metric names its unit, and every declared dimension has a value on the line', () => {
    const { metrics, docs } = recorder();
    metrics.podSyncLatency(120, 'created');
    metrics.providerError('createPod');
    metrics.eventsPublished(7);
    metrics.eventsPublished(0);
    metrics.eventsConsumed(1);
    metrics.lockTakeover('pod-watch#vk-1');
    metrics.coldStart('svk-prod-tick');
    const all = docs();
    assert.deepEqual(
      all.map((d) => Object.keys(METRICS).find((name) => name in d)),
      ['PodSyncLatency', 'ProviderErrors', 'EventsPublished', 'EventsConsumed', 'LockTakeovers', 'ColdStart'],
      'no line for zero events',
    );
    for (const doc of all) {
      const meta = (
        doc._aws as {
          CloudWatchMetrics: Array<{
            Dimensions: string[][];
            Metrics: Array<{ Name: keyof typeof METRICS; Unit: string }>;
          }>;
        }
      ).CloudWatchMetrics[0];
      assert.ok(meta);
      const [metric] = meta.Metrics;
      assert.ok(metric);
      assert.equal(metric.Unit, METRICS[metric.Name].unit);
      assert.equal(typeof doc[metric.Name], 'number');
      for (const set of meta.Dimensions) for (const d of set) assert.equal(typeof doc[d], 'string');
    }
    assert.equal(all[0]?.Outcome, 'created');
    assert.equal(all[1]?.Operation, 'createPod');
    assert.equal(all[2]?.EventsPublished, 7);
    assert.equal(all[4]?.Lock, 'pod-watch');
    assert.equal(all[4]?.LockName, 'pod-watch#vk-1');
    assert.equal(all[5]?.ColdStart, 1);
    assert.equal(all[5]?.function_name, 'svk-prod-tick');
  });

  it('gives every metric the `service` dimension, in every dimension set, beside Deployment', () => {
    const { metrics, docs } = recorder({ service: 'svk-service' });
    metrics.leaseRenewalLag('vk-1', 1);
    metrics.providerError('ping');
    metrics.coldStart('f');
    metrics.tickChainRestarted('lost');
    for (const doc of docs()) {
      const [meta] = (doc._aws as { CloudWatchMetrics: Array<{ Dimensions: string[][] }> }).CloudWatchMetrics;
      for (const set of meta?.Dimensions ?? []) assert.deepEqual(set.slice(0, 2), ['Deployment', 'service']);
      assert.equal(doc.service, 'svk-service');
    }
    const coldStart = docs()[2]?._aws as { CloudWatchMetrics: Array<{ Dimensions: string[][] }> } | undefined;
    assert.deepEqual(coldStart?.CloudWatchMetrics[0]?.Dimensions, [
      ['Deployment', 'service', 'function_name'],
    ]);
  });

  it('never throws into the work it measures', () => {
    const metrics = new EmfMetrics({
      deployment: 'd',
      write: () => {
        throw new Error('stdout closed');
      },
    });
    assert.doesNotThrow(() => metrics.providerError('ping'));
  });
});

describe('provider error counting', () => {
  it('counts failures by operation, but not "not found" nor calls cut short by the invocation', async () => {
    const { metrics, docs } = recorder();
    const failing: PodProvider = {
      createPod: async () => {
        throw new Error('backend down');
      },
      updatePod: async () => undefined,
      deletePod: async () => {
        throw new ProviderNotFoundError('gone');
      },
      getPod: async () => {
        throw new Error('aborted');
      },
      listPods: async () => [],
    };
    const pods = withPodProviderMetrics(failing, metrics);
    await assert.rejects(pods.createPod({}), /backend down/);
    await assert.rejects(pods.deletePod({}), ProviderNotFoundError);
    await assert.rejects(pods.getPod('ns', 'p', AbortSignal.abort()), /aborted/);
    await pods.updatePod({});
    assert.deepEqual(
      docs().map((d) => [d.Operation, d.ProviderErrors]),
      [['createPod', 1]],
    );
  });
});

describe('events published', () => {
  it('reports the entries the bus accepted, also when some failed for good', async () => {
    const counts: number[] = [];
    const detail = (i: number): PodEventDetail => ({
      v: 1,
      type: 'ADDED',
      node: 'vk-1',
      namespace: 'default',
      name: `pod-${i}`,
      uid: `uid-${i}`,
      resourceVersion: String(100 + i),
    });
    const publisher = new PodEventPublisher({
      maxAttempts: 2,
      baseDelayMs: 0,
      onPublished: (n) => counts.push(n),
      // Accepts every entry except pod-3's.
      send: async (entries) => ({
        Entries: entries.map((e) =>
          e.Detail.includes('"pod-3"')
            ? { ErrorCode: 'InternalFailure', ErrorMessage: 'x' }
            : { EventId: 'id' },
        ),
      }),
    });
    await publisher.publish(
      Array.from({ length: 12 }, (_, i) => detail(i)).filter((d) => d.name !== 'pod-3'),
    );
    await assert.rejects(publisher.publish([detail(1), detail(3)]), PublishError);
    assert.deepEqual(counts, [11, 1]);
  });
});
