import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { VolumeSources } from '../../lib/provider/docker/volume-delivery.ts';
import {
  containerStatus,
  shellContainer,
  shellPod,
  testDockerProvider,
  testEngine,
  waitForPod,
} from '../support/docker.ts';
import { uniqueName } from '../support/kube.ts';

/**
 * File volumes on a real engine, their sources given by the test (the
 * conformance suite reads them from a real API server): the first write, an
 * update swapped in through `..data`, and what the engine's stat of the
 * volume shows.
 */
describe('docker provider: file volumes on the engine', () => {
  const configMaps = new Map<string, Map<string, Buffer>>();
  const sources: VolumeSources = {
    configMap: async (namespace, name) => configMaps.get(`${namespace}/${name}`),
    secret: async () => undefined,
  };
  const provider = testDockerProvider({ volumeSources: sources });
  const docker = testEngine();
  const created: V1Pod[] = [];
  after(async () => {
    await Promise.all(created.map((p) => provider.deletePod(p).catch(() => undefined)));
  });

  it('writes the files, then swaps an update in: a reader never sees a file missing or partial', async () => {
    const ns = uniqueName('ns');
    configMaps.set(
      `${ns}/cfg`,
      new Map([
        ['a', Buffer.from('1')],
        ['b', Buffer.from('1')],
      ]),
    );
    // The reader checks, as fast as it can, that each file is always whole (1 or 2, never missing or
    // empty) while the update is swapped in, until it sees 2 in both and the new label.
    const script = [
      'n=0',
      'while :; do',
      '  a=$(cat /cfg/a) && b=$(cat /cfg/b) || { echo "a file missing after $n reads" > /dev/termination-log; exit 3; }',
      '  n=$((n+1))',
      '  case "$a$b" in 11|12|21|22) ;; *) echo "a partial file after $n reads: $a $b" > /dev/termination-log; exit 4;; esac',
      '  [ "$a$b" = 22 ] && grep -q \'stage="two"\' /info/labels && { echo "$n reads" > /dev/termination-log; exit 0; }',
      'done',
    ].join('\n');
    const pod = shellPod(
      ns,
      'reader',
      {},
      {
        restartPolicy: 'Never',
        volumes: [
          { name: 'cfg', configMap: { name: 'cfg' } },
          {
            name: 'info',
            downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
          },
        ],
        containers: [
          shellContainer('main', script, {
            terminationMessagePath: '/dev/termination-log',
            volumeMounts: [
              { name: 'cfg', mountPath: '/cfg' },
              { name: 'info', mountPath: '/info' },
            ],
          }),
        ],
      },
    );
    pod.metadata = { ...pod.metadata, labels: { stage: 'one' } };
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'reader Running');

    const infra = `svk_${pod.metadata?.uid}`;
    const stat = await docker.getContainer(infra).infoArchive({ path: '/.svk-volumes/cfg/..data' });
    const response = stat as unknown as { headers: Record<string, string>; resume(): void };
    response.resume();
    const header = response.headers['x-docker-container-path-stat'];
    assert.ok(header, 'the engine states ..data');
    const linkTarget = JSON.parse(Buffer.from(header, 'base64').toString('utf8')).linkTarget as string;
    assert.match(
      linkTarget,
      /\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.[0-9a-f]{16}$/,
      `..data links to ${linkTarget}`,
    );

    configMaps.set(
      `${ns}/cfg`,
      new Map([
        ['a', Buffer.from('2')],
        ['b', Buffer.from('2')],
      ]),
    );
    // An update of the pod's labels comes through updatePod, which reads every file volume again at once.
    const relabelled: V1Pod = { ...pod, metadata: { ...pod.metadata, labels: { stage: 'two' } } };
    await provider.updatePod(relabelled);
    const done = await waitForPod(
      provider,
      pod,
      (p) => containerStatus(p, 'main')?.state?.terminated !== undefined,
      'reader finished',
      60_000,
    );
    const terminated = containerStatus(done, 'main')?.state?.terminated;
    assert.equal(terminated?.exitCode, 0, `the reader saw the update whole: ${terminated?.message}`);
  });
});
