/**
 * `npm start` (scripts/start.ts) as a user runs it, against the test control
 * plane as "the current kubeconfig" and the test DynamoDB Local, where no
 * Docker-compatible engine answers: it says it runs the mock, the node
 * turns Ready, the Deployment in examples/ runs to Running on it, and SIGINT
 * stops everything with exit code 0 and no process left behind. A second
 * start finds the table and resumes.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, type V1Deployment } from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  readNode,
  readyStatus,
  uniqueName,
  waitFor,
} from '../support/kube.ts';
import {
  forgetKeptServing,
  killNpmStart,
  type NpmStart,
  npmStartNodeReady,
  npmStartOnTestCluster,
  stopNpmStart,
} from '../support/npm-start.ts';

const env = testEnv();
const admin = adminClients(env);
const apps = admin.config.makeApiClient(AppsV1Api);
const root = new URL('../..', import.meta.url).pathname;
const node = uniqueName('start');
const ns = uniqueName('start');
const table = uniqueName('svk-start');
/** Where npm start looks for a Docker-compatible engine: a socket nothing listens on. */
const noEngine = `unix://${join(tmpdir(), `${node}-no-engine.sock`)}`;

function start(): NpmStart {
  // No engine answering, whatever the machine has: npm start falls back to the mock.
  return npmStartOnTestCluster(env, { table, node, env: { DOCKER_HOST: noEngine, SVK_LOG_LEVEL: 'info' } });
}

let running: NpmStart | undefined;

before(async () => {
  await createTestNamespace(admin, ns);
});

after(async () => {
  killNpmStart(running);
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, node);
  forgetKeptServing(env.kube.adminKubeconfig, node);
});

describe('npm start', () => {
  it('brings a node to Ready, runs the example Deployment, and stops cleanly on SIGINT', {
    timeout: 5 * 60_000,
  }, async () => {
    running = start();
    const s = running;
    await waitFor(
      async () => {
        const n = await readNode(admin, node);
        const notReady = n?.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready');
        return readyStatus(n) === 'True' && !notReady;
      },
      { timeoutMs: 90_000, what: `${node} Ready; npm start said:\n${s.stderr.join('\n')}` },
    );
    const said = s.stderr.find((l) => l.startsWith('[start] provider')) ?? '';
    assert.equal(
      said,
      `[start] provider mock: no Docker-compatible engine answers at ${noEngine} (connect ENOENT ${noEngine.slice('unix://'.length)})`,
    );
    assert.ok(s.stderr.indexOf(said) <= 1, `among the first lines:\n${s.stderr.join('\n')}`);
    assert.ok(
      s.stderr.some((l) => l.includes('using the current kubeconfig')),
      s.stderr.join('\n'),
    );
    assert.ok(
      s.stderr.some((l) => l.includes(`table ${table} created`)),
      s.stderr.join('\n'),
    );

    const example = load(readFileSync(`${root}/examples/hello-deployment.yaml`, 'utf8')) as V1Deployment;
    const podSpec = example.spec?.template.spec;
    assert.equal(podSpec?.nodeSelector?.type, 'virtual-kubelet');
    assert.ok(podSpec?.tolerations?.some((t) => t.key === 'virtual-kubelet.io/provider'));
    // Other suites' virtual nodes carry the same label: pin the replicas to this one.
    if (podSpec?.nodeSelector) podSpec.nodeSelector['kubernetes.io/hostname'] = node;
    await apps.createNamespacedDeployment({ namespace: ns, body: example });
    const replicas = example.spec?.replicas ?? 1;
    await waitFor(
      async () => {
        const pods = (await admin.core.listNamespacedPod({ namespace: ns })).items;
        return (
          pods.length === replicas &&
          pods.every((p) => p.spec?.nodeName === node && p.status?.phase === 'Running')
        );
      },
      { timeoutMs: 120_000, what: `${replicas} example pods Running on ${node}` },
    );

    // Readable logs: one formatted line per event, no raw JSON.
    assert.ok(
      s.stdout.some((l) =>
        new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  tick [0-9a-f]{8} node=${node} `).test(l),
      ),
      s.stdout.slice(0, 20).join('\n'),
    );
    assert.deepEqual(
      s.stdout.filter((l) => l.startsWith('{')),
      [],
    );

    assert.equal(await stopNpmStart(s), 0, s.stderr.join('\n'));
    assert.ok(
      s.stderr.some((l) => l.includes('[start] stopped')),
      s.stderr.join('\n'),
    );
  });

  it('resumes from the same table on the next start', { timeout: 2 * 60_000 }, async () => {
    running = start();
    const s = running;
    await waitFor(() => s.stderr.some((l) => l.includes(`table ${table} found: resuming`)), {
      timeoutMs: 60_000,
      what: `the second start to find table ${table}; it said:\n${s.stderr.join('\n')}`,
    });
    await npmStartNodeReady(admin, s, node, 60_000);
    assert.equal(await stopNpmStart(s), 0, s.stderr.join('\n'));
  });
});
