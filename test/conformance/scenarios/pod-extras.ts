import assert from 'node:assert/strict';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import { containerStatus } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;

/** What the kubelet gives every pod beside its volumes: fsGroup, seLinuxOptions, hostAliases, its address in env. */
export function podExtrasScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'pod-extras',
    "fsGroup owns the pod's Secret and emptyDir files, seLinuxOptions are accepted, hostAliases are in /etc/hosts as the kubelet writes them, and the pod IP and host IP are in env",
    4 * MINUTE,
    podExtras,
  );
}

async function podExtras(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('pod-extras');
  await h.admin.core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'creds' }, stringData: { password: 'secret-value' } },
  });
  const tab = '\t';
  const script = [
    ...[
      ['fsGroup is a supplementary group', 'id -G | tr " " "\\n" | grep -qx 1234'],
      ['secret file in the fsGroup', 'test "$(stat -L -c %g /sec/password)" = 1234'],
      ['secret file mode', 'test "$(stat -L -c %a /sec/password)" = 440'],
      [
        'secret readable by the non-root user through the group',
        'test "$(cat /sec/password)" = secret-value',
      ],
      ['emptyDir in the fsGroup, setgid, 0777', 'test "$(stat -c %g:%a /scratch)" = 1234:2777'],
      [
        'a new file in the emptyDir is in the fsGroup',
        'echo x > /scratch/f && test "$(stat -c %g /scratch/f)" = 1234',
      ],
      ['the hostAliases header', 'grep -qx "# Entries added by HostAliases." /etc/hosts'],
      ['one line per alias IP', `grep -qx "123.45.67.89${tab}foo${tab}bar" /etc/hosts`],
      ['the pod IP in env', 'echo "$POD_IP" | grep -Eqx "[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+"'],
      ["the pod IP is the pod's own line", `grep -q "^$POD_IP${tab}" /etc/hosts`],
      ['the host IP in env', 'test -n "$HOST_IP"'],
    ].map(([name, test]) => `{ ${test}; } || { echo "FAILED: ${name}"; exit 3; }`),
    'echo "ALL-OK $HOST_IP" > /tmp/termination-log',
  ].join('\n');
  await h.pods.create(ns, {
    metadata: { name: 'extras' },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      securityContext: {
        fsGroup: 1234,
        fsGroupChangePolicy: 'OnRootMismatch',
        runAsUser: 1000,
        seLinuxOptions: { level: 's0:c1,c2' },
      },
      hostAliases: [{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }],
      volumes: [
        { name: 'sec', secret: { secretName: 'creds', defaultMode: 0o440 } },
        { name: 'scratch', emptyDir: {} },
      ],
      containers: [
        shell('main', script, {
          terminationMessagePolicy: 'FallbackToLogsOnError',
          terminationMessagePath: '/tmp/termination-log',
          env: [
            { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
          ],
          volumeMounts: [
            { name: 'sec', mountPath: '/sec' },
            { name: 'scratch', mountPath: '/scratch' },
          ],
        }),
      ],
    }),
  });
  const done = await h.pods.waitFor(
    ns,
    'extras',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    { timeoutMs: 3 * MINUTE, what: 'pod extras finished' },
  );
  const main = containerStatus(done, 'main')?.state?.terminated;
  assert.equal(main?.exitCode, 0, `every check passed (${main?.message})`);
  assert.equal(main?.message?.trim(), `ALL-OK ${done.status?.hostIP}`, "HOST_IP is the pod status's hostIP");
}
