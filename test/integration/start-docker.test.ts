/**
 * `npm start` next to a Docker-compatible engine (the run's Podman service or
 * Docker Engine as DOCKER_HOST): it says in its first lines that it runs the docker provider,
 * the example Deployment's replicas become real busybox containers, and
 * SIGINT stops everything with exit code 0.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, type V1Deployment } from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { engineNamePattern, testEngine } from '../support/docker.ts';
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
const node = uniqueName('start-docker');
const ns = uniqueName('start-docker');
const docker = testEngine(env);

before(async () => {
  await createTestNamespace(admin, ns);
});

after(async () => {
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, node);
  forgetKeptServing(env.kube.adminKubeconfig, node);
  // Whatever a failed run left on the engine for this namespace.
  for (const c of await docker.listContainers({
    all: true,
    filters: { label: [`${LABELS.namespace}=${ns}`] },
  }))
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
});

describe('npm start with a Docker-compatible engine', () => {
  it('chooses the docker provider, says so, runs the example Deployment as real containers, and stops on SIGINT', {
    timeout: 5 * 60_000,
  }, async () => {
    const { SVK_PROVIDER: _unset, ...inherited } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      cwd: root,
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...inherited,
        KUBECONFIG: env.kube.adminKubeconfig,
        SVK_KUBECONFIG: env.kube.kubeletKubeconfig,
        SVK_DYNAMODB_ENDPOINT: env.dynamodb.endpoint,
        AWS_REGION: env.dynamodb.region,
        SVK_TABLE_NAME: uniqueName('svk-start-docker'),
        SVK_NODE_NAMES: node,
        DOCKER_HOST: env.docker.host,
        SVK_DOCKER_NETWORK: env.docker.network,
      },
    });
    const stderr: string[] = [];
    child.stderr.on('data', (d: Buffer) => stderr.push(...d.toString().split('\n').filter(Boolean)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(() => stderr.some((l) => l.startsWith('[start] provider')), {
        timeoutMs: 30_000,
        what: `npm start to name its provider; it said:\n${stderr.join('\n')}`,
      });
      const line = stderr.find((l) => l.startsWith('[start] provider')) ?? '';
      assert.match(
        line,
        new RegExp(`^\\[start\\] provider docker: ${engineNamePattern(env).source} answers at unix://`),
      );
      assert.ok(stderr.indexOf(line) <= 1, `among the first lines:\n${stderr.join('\n')}`);
      await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
        timeoutMs: 90_000,
        what: `${node} Ready; npm start said:\n${stderr.join('\n')}`,
      });
      const example = load(readFileSync(`${root}/examples/hello-deployment.yaml`, 'utf8')) as V1Deployment;
      const podSpec = example.spec?.template.spec;
      if (podSpec?.nodeSelector) podSpec.nodeSelector['kubernetes.io/hostname'] = node;
      await apps.createNamespacedDeployment({ namespace: ns, body: example });
      const replicas = example.spec?.replicas ?? 1;
      await waitFor(
        async () => {
          const pods = (await admin.core.listNamespacedPod({ namespace: ns })).items;
          return pods.length === replicas && pods.every((p) => p.status?.phase === 'Running');
        },
        { timeoutMs: 120_000, what: `${replicas} example pods Running on ${node}` },
      );
      const running = await docker.listContainers({
        filters: { label: [`${LABELS.namespace}=${ns}`, `${LABELS.role}=app`] },
      });
      assert.equal(running.length, replicas, 'one running busybox container per replica');
      const [first] = running;
      const log = await docker
        .getContainer(first?.Id ?? '')
        .logs({ stdout: true, stderr: true, follow: false });
      assert.match(log.toString(), /hello from a virtual node/);
    } finally {
      process.kill(child.pid ?? 0, 'SIGINT');
    }
    assert.equal(await exited, 0, stderr.join('\n'));
  });
});
