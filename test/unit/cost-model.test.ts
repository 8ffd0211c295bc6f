import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CostFigures,
  idleCost,
  monthlyCost,
  parseCostFigures,
  type UsageRates,
} from '../../lib/cost/cost-model.ts';
import { MINUTES_PER_MONTH, PRICES } from '../../lib/cost/prices.ts';

const zero: UsageRates = {
  invocations: 0,
  gbSeconds: 0,
  dynamoWriteUnits: 0,
  dynamoReadUnits: 0,
  sqsRequests: 0,
  eventBridgeEvents: 0,
  scheduledInvocations: 0,
  logBytes: 0,
  kubeRequests: 0,
};

const figures: CostFigures = parseCostFigures({
  measured: { at: '2026-11-23', machine: 'test', command: 'none' },
  cadences: {
    tick: {
      base: { ...zero, invocations: 7, gbSeconds: 0.5, sqsRequests: 20, kubeRequests: 1 },
      perNode: { ...zero, gbSeconds: 0.01, dynamoWriteUnits: 1, kubeRequests: 6 },
      maxNodesPerDeployment: 250,
      memoryMb: { tick: 256 },
    },
    continuous: {
      base: { ...zero, invocations: 4, gbSeconds: 250 },
      perNode: { ...zero, dynamoWriteUnits: 12 },
      maxNodesPerDeployment: 250,
      memoryMb: { heartbeat: 512 },
    },
  },
  pod: {
    invocations: 6,
    gbSeconds: 0.45,
    dynamoWriteUnits: 10,
    dynamoReadUnits: 10,
    eventBridgeEvents: 6,
    logBytes: 5000,
    kubeRequests: 12,
    source: 'test',
  },
  fixed: { alarms: { tick: 4, continuous: 7 }, customMetrics: 4, customMetricsPerNode: 1 },
});

describe('the cost model', () => {
  it('prices a deployment base and each node at the list prices, per month', () => {
    const month = MINUTES_PER_MONTH;
    const expected =
      7 * month * PRICES.lambdaRequest +
      (0.5 + 0.01) * month * PRICES.lambdaGbSecond +
      20 * month * PRICES.sqsFifoRequest +
      1 * month * PRICES.dynamoWriteUnit;
    assert.ok(Math.abs(idleCost(figures, 'tick', 1) - expected) < 1e-9);
  });

  it('needs a deployment per 250 nodes, and counts the base of each', () => {
    const a = monthlyCost(figures, {
      cadence: 'continuous',
      nodes: 1000,
      podsPerMonth: 0,
      alarms: true,
      dashboard: true,
      metrics: true,
      perNodeMetrics: true,
    });
    assert.equal(a.deployments, 4);
    const duration = a.idle.find((l) => l.item === 'Lambda duration')?.dollars ?? 0;
    assert.ok(Math.abs(duration - 4 * 250 * MINUTES_PER_MONTH * PRICES.lambdaGbSecond) < 1e-6);
    assert.deepEqual(
      a.fixed.map((l) => l.item),
      [
        'alarms (7 per deployment)',
        'dashboard (beyond three free)',
        'custom metrics',
        'per-node lease lag metric',
      ],
    );
    const perNode = a.fixed.find((l) => l.item === 'per-node lease lag metric')?.dollars ?? 0;
    assert.ok(Math.abs(perNode - 1000 * PRICES.customMetricMonth) < 1e-9);
  });

  it('adds each pod once, and lists the fixed CloudWatch costs apart, only those switched on', () => {
    const a = monthlyCost(figures, {
      cadence: 'tick',
      nodes: 1,
      podsPerMonth: 1_000_000,
      alarms: false,
      dashboard: false,
      metrics: false,
      perNodeMetrics: false,
    });
    assert.deepEqual(a.fixed, []);
    const events = a.pods.find((l) => l.item === 'EventBridge')?.dollars ?? 0;
    assert.ok(Math.abs(events - 6 * PRICES.eventBridgeEvent * 1_000_000) < 1e-9);
    assert.equal(a.kubeRequestsPerMonth, (1 + 6) * MINUTES_PER_MONTH + 12 * 1_000_000);
  });

  it('rejects a figures file naming what is wrong', () => {
    assert.throws(() => parseCostFigures({ cadences: {} }), /measured: .*cadences\.tick/s);
  });
});
