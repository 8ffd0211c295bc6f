/**
 * Integration-test orchestrator: brings up one real control plane and one
 * DynamoDB Local for the whole run, hands their coordinates to the test files
 * through SVK_TEST_ENV, and tears everything down afterwards, also when the
 * run is interrupted.
 *
 * Usage: tsx test/run-integration.ts [--test-name-pattern=...] [test files or globs...]
 * (default: the integration tests and the conformance suites of
 * CONFORMANCE_PROVIDERS; arguments starting with `--` go to `node --test`)
 *
 * The Docker provider's tests run against a Podman service, or with
 * SVK_TEST_ENGINE=dockerd against a Docker Engine (scripts/test-docker-engine.sh).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { startControlPlane } from '../lib/local/control-plane.ts';
import { startDockerd } from '../lib/local/dockerd.ts';
import { startDynamoDbLocal } from '../lib/local/dynamodb-local.ts';
import { bridgeGateway } from '../lib/local/engine-gateway.ts';
import { freePort } from '../lib/local/free-ports.ts';
import { startPodman } from '../lib/local/podman.ts';
import { startRegistry } from '../lib/local/registry.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';
import { engineCertificates } from './support/docker-tls.ts';
import type { TestEnv } from './support/env.ts';

const root = new URL('..', import.meta.url).pathname;
// One folder per run, so that concurrent runs (several engineers, or CI) never share state.
const runDir = join(root, '.local', `test-run-${process.pid}`);
const testFlags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const patterns = process.argv.slice(2).filter((a) => !a.startsWith('--'));
/**
 * The providers whose conformance suite (`test/conformance/<provider>.test.ts`)
 * the default run includes. A provider joins once its suite passes here.
 */
const CONFORMANCE_PROVIDERS = ['mock', 'docker', 'ecs-fargate'];
const engine = testEngine(process.env.SVK_TEST_ENGINE);
const files =
  patterns.length > 0
    ? patterns
    : ['test/integration/**/*.test.ts', ...CONFORMANCE_PROVIDERS.map((p) => `test/conformance/${p}.test.ts`)];

function testEngine(name: string | undefined): TestEnv['docker']['engine'] {
  if (name === undefined || name === 'podman' || name === 'dockerd') return name ?? 'podman';
  process.stderr.write(`SVK_TEST_ENGINE must be podman or dockerd, not ${name}\n`);
  process.exit(2);
}

function log(line: string): void {
  process.stderr.write(`[integration] ${line}\n`);
}

const stops: Array<() => Promise<void>> = [];
let stopping: Promise<void> | undefined;
function stopAll(): Promise<void> {
  stopping ??= (async () => {
    for (const stop of stops.reverse()) {
      await stop().catch((err: unknown) => log(`stop failed: ${String(err)}`));
    }
  })();
  return stopping;
}

/**
 * Real containers for the Docker provider's tests, and a registry with basic auth that
 * they pull from over plain HTTP (so the engine learns its address before it starts:
 * Podman from its registries.conf; Docker Engine treats 127.0.0.0/8 as insecure itself).
 */
function startEngine() {
  return startRegistry({ dir: join(runDir, 'registry'), log }).then(async (reg) => {
    stops.push(() => reg.stop());
    // Docker Engine serves its own TLS endpoint as well, for the remote-engine test (docker-tls.test.ts).
    const certs = engine === 'dockerd' ? await engineCertificates(join(runDir, 'dockerd-tls')) : undefined;
    const service = await (certs
      ? startDockerd({
          dir: join(runDir, 'dockerd'),
          log,
          tls: { ...certs, port: await freePort('127.0.0.1') },
        })
      : startPodman({ dir: join(runDir, 'podman'), log, insecureRegistries: [reg.address] }));
    stops.push(() => service.stop());
    const tls =
      certs && 'tlsHost' in service && service.tlsHost
        ? { host: service.tlsHost, certPath: certs.clientCertPath }
        : undefined;
    return { dockerEngine: service, registry: reg, tls };
  });
}

async function main(): Promise<number> {
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true });

  const started = Date.now();
  const engineStarted = startEngine();
  const [{ controlPlane, podGateway }, dynamo, { dockerEngine, registry, tls }] = await Promise.all([
    // After the engine: pods reach the API server at its bridge's gateway, which the serving certificate names.
    engineStarted.then(async ({ dockerEngine }) => {
      const gateway = await bridgeGateway(dockerEngine.socketPath, dockerEngine.network);
      const cp = await startControlPlane({
        dir: join(runDir, 'control-plane'),
        log,
        ...(gateway ? { podAddresses: [gateway] } : {}),
      });
      stops.push(() => cp.stop());
      return { controlPlane: cp, podGateway: gateway };
    }),
    startDynamoDbLocal({ inMemory: true, log }).then((db) => {
      stops.push(() => db.stop());
      return db;
    }),
    engineStarted,
  ]);
  const tableName = 'svk-test';
  const region = 'local';
  const { client } = createDynamoDbClient({ endpoint: dynamo.endpoint, region });
  await createTable(client, tableName);
  log(`environment ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);

  // Lets a test stop and restart the shared kube-apiserver (outage scenarios), and then the
  // controllers, so that their informers' outage backoff does not leak into later tests.
  const actions: Record<string, () => Promise<void>> = {
    '/apiserver/stop': () => controlPlane.stopApiServer(),
    '/apiserver/start': () => controlPlane.startApiServer(),
    '/controllers/restart': () => controlPlane.restartControllers(),
  };
  const control = createServer((req, res) => {
    const action = req.url ? actions[req.url]?.() : undefined;
    if (!action || req.method !== 'POST') {
      res.writeHead(404).end();
      return;
    }
    action.then(
      () => res.writeHead(204).end(),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  stops.push(() => new Promise<void>((resolve) => control.close(() => resolve())));
  const controlAddress = control.address();
  if (controlAddress === null || typeof controlAddress === 'string')
    throw new Error('control server has no port');

  const env: TestEnv = {
    kube: {
      server: controlPlane.server,
      ...(podGateway ? { podApiServer: `${podGateway}:${controlPlane.ports.apiServer}` } : {}),
      adminKubeconfig: controlPlane.adminKubeconfig,
      kubeletKubeconfig: controlPlane.kubeletKubeconfig,
      kubeletApiKubeconfig: controlPlane.kubeletApiKubeconfig,
      functionKubeconfigs: controlPlane.functionKubeconfigs,
      ca: controlPlane.ca,
    },
    dynamodb: { endpoint: dynamo.endpoint, tableName, region },
    controlPlaneDir: controlPlane.dir,
    controlUrl: `http://127.0.0.1:${controlAddress.port}`,
    etcdUrl: `http://127.0.0.1:${controlPlane.ports.etcdClient}`,
    docker: {
      engine,
      host: dockerEngine.dockerHost,
      network: dockerEngine.network,
      dir: dockerEngine.dir,
      ...(tls ? { tls } : {}),
    },
    registry: { address: registry.address, username: registry.username, password: registry.password },
  };
  const envFile = join(runDir, 'env.json');
  writeFileSync(envFile, JSON.stringify(env, null, 2));

  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=spec', ...testFlags, ...files],
    {
      stdio: 'inherit',
      env: { ...process.env, SVK_TEST_ENV: envFile },
    },
  );
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const code = await new Promise<number>((resolve) => {
    child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
  });
  return code;
}

main()
  .then(async (code) => {
    await stopAll();
    // Component logs stay for a failed run.
    if (code === 0) rmSync(runDir, { recursive: true, force: true });
    process.exit(code);
  })
  .catch(async (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    await stopAll();
    process.exit(1);
  });
