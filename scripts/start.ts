/**
 * `npm start`: the virtual kubelet on its local defaults. Brings up the local
 * control plane (building it on first use) and DynamoDB Local (data kept in
 * .local/start/dynamodb, so a restart resumes), then runs the functions on
 * their schedules through the local Lambda runtime. Ctrl-C stops everything.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { controlPlaneBinariesPresent, startControlPlane } from '../lib/local/control-plane.ts';
import { startDynamoDbLocal } from '../lib/local/dynamodb-local.ts';
import { LocalDeployment } from '../lib/local/local-deployment.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb.ts';
import { createTable } from '../lib/state/table-definition.ts';

const root = new URL('..', import.meta.url).pathname;
const dir = join(root, '.local', 'start');
const TABLE = 'serverless-virtual-kubelet';

function say(line: string): void {
  process.stderr.write(`[start] ${line}\n`);
}

const stops: Array<() => Promise<void>> = [];
let stopping = false;
async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    say('stopping…');
    for (const stop of stops.reverse())
      await stop().catch((err: unknown) => say(`stop failed: ${String(err)}`));
  }
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

async function main(): Promise<void> {
  if (!controlPlaneBinariesPresent()) {
    say('building the local control plane (first run only, about 5 minutes on 2 cores)…');
    const built = spawnSync('bash', [join(root, 'scripts/ensure-kube.sh')], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('scripts/ensure-kube.sh failed');
  }
  mkdirSync(dir, { recursive: true });
  const [controlPlane, dynamo] = await Promise.all([
    startControlPlane({ dir: join(dir, 'control-plane'), log: say }),
    startDynamoDbLocal({ dir: join(dir, 'dynamodb'), inMemory: false, log: () => undefined }),
  ]);
  stops.push(
    () => controlPlane.stop(),
    () => dynamo.stop(),
  );
  const { client } = createDynamoDbClient({ endpoint: dynamo.endpoint, region: 'local' });
  await createTable(client, TABLE);

  const env = {
    ...process.env,
    SVK_KUBECONFIG: controlPlane.kubeletKubeconfig,
    SVK_DYNAMODB_ENDPOINT: dynamo.endpoint,
    AWS_REGION: 'local',
    SVK_TABLE_NAME: TABLE,
  };
  const deployment = new LocalDeployment({
    env,
    // pod-sync runs once per pod event: only its failures are worth a line.
    onResult: (invocation, result) => {
      if (invocation.functionName !== 'pod-sync' || result.status !== 'ok') {
        say(`${invocation.functionName} ${invocation.requestId.slice(0, 8)} ended: ${result.status}`);
      }
    },
  });
  stops.push(() => deployment.stop({ abortRunning: true }));
  deployment.start();

  say(`DynamoDB Local: ${dynamo.endpoint} (table ${TABLE}, data in ${join(dir, 'dynamodb')})`);
  say(`kube-apiserver: ${controlPlane.server}`);
  say(
    `running: heartbeat, pod-watch, pod-status and reconcile every minute, pod-sync on pod events, for node(s) ${process.env.SVK_NODE_NAMES ?? 'virtual-kubelet'}`,
  );
  say(`try: kubectl --kubeconfig ${controlPlane.adminKubeconfig} get nodes -o wide`);
  say('Ctrl-C stops everything');
}

main().catch(async (err: unknown) => {
  say(err instanceof Error ? (err.stack ?? err.message) : String(err));
  await shutdown(1);
});
