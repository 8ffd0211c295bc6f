import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type V1Endpoints, type V1Pod, Watch } from '@kubernetes/client-node';
import { PipelineHarness } from '../harness/pipeline-harness.ts';
import { dockerProviderSetup } from '../harness/providers/docker.ts';
import { testEnv } from '../support/env.ts';
import { kubectl } from '../support/kubelet-api.ts';

/**
 * The workload a Helm chart installs, end to end on real containers: a
 * Deployment of 3 replicas whose web servers have httpGet readiness and
 * liveness probes and a preStop hook, behind a Service, rolled to a new
 * image with `kubectl rollout status` waiting for it, through the whole
 * pipeline (real kube-apiserver, controller-manager with its Deployment and
 * endpoints controllers, scheduler; the deployment's functions; the docker
 * provider on the run's engine). Meanwhile every pod and Endpoints change
 * is watched: no address may be among the Service's ready endpoints unless
 * its pod was Ready before (by the API server's resourceVersion order).
 */

const OLD_IMAGE = 'public.ecr.aws/docker/library/busybox:1.36';
const NEW_IMAGE = 'docker.io/library/busybox:1.36';
const MINUTE = 60_000;

describe('docker provider: a probed Deployment behind a Service, rolled to a new image', () => {
  let h: PipelineHarness;
  before(async () => {
    h = await PipelineHarness.start({ environment: testEnv(), provider: dockerProviderSetup(testEnv()) });
  });
  after(async () => {
    await h?.stop();
  });

  it('rolls out with kubectl rollout status completing, never an unready pod among the endpoints', async () => {
    const ns = await h.namespace('rollout');
    const pods = new Map<string, Array<{ rv: number; ip?: string; ready: boolean }>>();
    const endpoints: Array<{ rv: number; ready: string[] }> = [];
    const watch = new Watch(h.admin.config);
    const stops = await Promise.all([
      watch.watch(
        `/api/v1/namespaces/${ns}/pods`,
        {},
        (_type, pod: V1Pod) => {
          const name = pod.metadata?.name ?? '';
          const ready =
            pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
          const ip = pod.status?.podIP;
          pods.set(name, [
            ...(pods.get(name) ?? []),
            { rv: Number(pod.metadata?.resourceVersion), ready, ...(ip ? { ip } : {}) },
          ]);
        },
        () => {},
      ),
      watch.watch(
        `/api/v1/namespaces/${ns}/endpoints`,
        {},
        (_type, e: V1Endpoints) => {
          if (e.metadata?.name !== 'web') return;
          const ready = (e.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip));
          endpoints.push({ rv: Number(e.metadata?.resourceVersion), ready });
        },
        () => {},
      ),
    ]);
    try {
      await h.admin.core.createNamespacedService({
        namespace: ns,
        body: {
          metadata: { name: 'web' },
          spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
        },
      });
      await h.pods.createDeployment(ns, {
        metadata: { name: 'web' },
        spec: {
          replicas: 3,
          selector: { matchLabels: { app: 'web' } },
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: h.pods.spec({
              terminationGracePeriodSeconds: 20,
              containers: [
                {
                  name: 'web',
                  image: OLD_IMAGE,
                  imagePullPolicy: 'IfNotPresent',
                  command: [
                    'sh',
                    '-c',
                    'mkdir -p /www && echo ok > /www/index.html && sleep 3 && exec httpd -f -p 8080 -h /www',
                  ],
                  ports: [{ name: 'http', containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 2 },
                  livenessProbe: {
                    httpGet: { path: '/', port: 'http' },
                    initialDelaySeconds: 10,
                    periodSeconds: 5,
                  },
                  lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sleep 2'] } } },
                },
              ],
            }),
          },
        },
      });
      const first = await kubectl(
        ['-n', ns, 'rollout', 'status', 'deployment/web', '--timeout=240s'],
        5 * MINUTE,
      );
      assert.equal(first.code, 0, `the first rollout completes: ${first.stdout}${first.stderr}`);
      const patched = await kubectl(['-n', ns, 'set', 'image', 'deployment/web', `web=${NEW_IMAGE}`], MINUTE);
      assert.equal(patched.code, 0, patched.stderr);
      const rolled = await kubectl(
        ['-n', ns, 'rollout', 'status', 'deployment/web', '--timeout=300s'],
        6 * MINUTE,
      );
      assert.equal(
        rolled.code,
        0,
        `the rollout to the new image completes: ${rolled.stdout}${rolled.stderr}`,
      );
      assert.match(rolled.stdout, /successfully rolled out/);

      const running = (await h.pods.list(ns)).filter((p) => !p.metadata?.deletionTimestamp);
      assert.equal(running.length, 3);
      for (const pod of running) assert.equal(pod.spec?.containers[0]?.image, NEW_IMAGE);
      assert.ok(
        endpoints.some((e) => e.ready.length === 3),
        'the Service had its 3 endpoints',
      );
      // Every address among the ready endpoints belonged to a pod that was Ready before that Endpoints write.
      const violations = endpoints.flatMap((e) =>
        e.ready.flatMap((ip) => {
          const readyBefore = [...pods.values()].some((history) =>
            history.some((s) => s.ip === ip && s.ready && s.rv < e.rv),
          );
          return readyBefore ? [] : [`${ip} at resourceVersion ${e.rv}`];
        }),
      );
      assert.deepEqual(violations, [], 'no endpoint pointed at a pod before it was Ready');
      assert.ok(pods.size >= 6, `old and new replicas were seen (${pods.size} pods)`);
    } finally {
      for (const stop of stops) stop.abort();
    }
  });
});
