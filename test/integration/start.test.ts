/**
 * `npm start` (scripts/start.ts) as a user runs it, against the test control
 * plane as "the current kubeconfig" and the test DynamoDB Local, where no
 * Docker-compatible engine answers: it says it runs the mock, the node
 * turns Ready, the Deployment in examples/ runs to Running on it, and SIGINT
 * stops everything with exit code 0 and no process left behind. A second
 * start finds the table and resumes.
 */
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
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
import { forgetKeptServing } from '../support/npm-start.ts';

const env = testEnv();
const admin = adminClients(env);
const apps = admin.config.makeApiClient(AppsV1Api);
const root = new URL('../..', import.meta.url).pathname;
const node = uniqueName('start');
const ns = uniqueName('start');
const table = uniqueName('svk-start');
/** Where npm start looks for a Docker-compatible engine: a socket nothing listens on. */
const noEngine = `unix://${join(tmpdir(), `${node}-no-engine.sock`)}`;

interface Started {
  child: ChildProcessByStdio<null, Readable, Readable>;
  stdout: string[];
  stderr: string[];
  exited: Promise<number | null>;
}

function start(): Started {
  // No provider chosen and no engine answering, whatever the machine has: npm start falls back to the mock.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'SVK_PROVIDER' && !/^(SVK_)?DOCKER_/.test(k)),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: root,
    // Its own process group, so that the test can tell whether anything it started is left.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...inherited,
      DOCKER_HOST: noEngine,
      KUBECONFIG: env.kube.adminKubeconfig,
      // The functions run as the virtual kubelet, as everywhere in the suite.
      SVK_KUBECONFIG: env.kube.kubeletKubeconfig,
      SVK_DYNAMODB_ENDPOINT: env.dynamodb.endpoint,
      AWS_REGION: env.dynamodb.region,
      SVK_TABLE_NAME: table,
      SVK_NODE_NAMES: node,
      SVK_LOG_LEVEL: 'info',
    },
  });
  const started: Started = {
    child,
    stdout: [],
    stderr: [],
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
  const collect = (into: string[]) => {
    let partial = '';
    return (d: Buffer) => {
      const parts = (partial + d.toString()).split('\n');
      partial = parts.pop() ?? '';
      into.push(...parts);
    };
  };
  child.stdout.on('data', collect(started.stdout));
  child.stderr.on('data', collect(started.stderr));
  return started;
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stop(s: Started): Promise<number | null> {
  const pid = s.child.pid ?? 0;
  process.kill(pid, 'SIGINT');
  const code = await Promise.race([
    s.exited,
    new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000).unref()),
  ]);
  if (code === 'hung') {
    process.kill(-pid, 'SIGKILL');
    assert.fail(`npm start did not exit on SIGINT:\n${s.stderr.join('\n')}`);
  }
  await waitFor(() => !groupAlive(pid), { timeoutMs: 15_000, what: 'no process of npm start left' });
  return code;
}

let running: Started | undefined;

before(async () => {
  await createTestNamespace(admin, ns);
});

after(async () => {
  if (running?.child.pid && groupAlive(running.child.pid)) process.kill(-running.child.pid, 'SIGKILL');
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

    assert.equal(await stop(s), 0);
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
    await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
      timeoutMs: 60_000,
      what: `${node} still Ready`,
    });
    assert.equal(await stop(s), 0);
  });
});
