import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { expandEnv } from '../../lib/kube/env-expansion.ts';
import { filePathProblem } from '../../lib/provider/file-volume-names.ts';
import {
  type FileVolume,
  fileVolume,
  mountSubPath,
  payloadDigest,
  readsPodMetadata,
  type SourceData,
  sourceKey,
  sourcesToRead,
  volumePayload,
  withPodMetadata,
} from '../../lib/provider/file-volumes.ts';

const pod: V1Pod = {
  metadata: {
    namespace: 'shop',
    name: 'web',
    uid: 'u-1',
    labels: { tier: 'front', app: 'web' },
    annotations: { note: 'hi' },
  },
  spec: {
    containers: [
      { name: 'app', image: 'busybox', resources: { limits: { memory: '64Mi' }, requests: { cpu: '250m' } } },
    ],
  },
};

function planned(volume: V1Volume): FileVolume {
  const result = fileVolume(volume, pod, { allocatable: { cpu: '4', memory: '8Gi' } });
  if ('reasons' in result) throw new Error(result.reasons.join('; '));
  return result.volume;
}

const text = (files: { path: string; mode: number; content: Buffer }[]) =>
  files.map((f) => [f.path, f.mode.toString(8), f.content.toString('utf8')]);

function data(entries: Record<string, Record<string, string> | undefined>): Map<string, SourceData> {
  return new Map(
    Object.entries(entries).map(([key, value]) => [
      key,
      value && new Map(Object.entries(value).map(([k, v]) => [k, Buffer.from(v)])),
    ]),
  );
}

describe('file volumes: what a volume holds', () => {
  it('writes every key of a ConfigMap without items, at the default mode 0644', () => {
    const volume = planned({ name: 'cfg', configMap: { name: 'settings' } });
    assert.deepEqual(sourcesToRead(volume), [{ kind: 'configMap', name: 'settings' }]);
    const payload = volumePayload(volume, data({ 'configMap/settings': { b: '2', a: '1' } }));
    assert.ok('files' in payload);
    assert.deepEqual(text(payload.files), [
      ['a', '644', '1'],
      ['b', '644', '2'],
    ]);
  });

  it('writes items at their paths, with their own mode or the defaultMode, and only them', () => {
    const volume = planned({
      name: 'cfg',
      configMap: {
        name: 'settings',
        defaultMode: 0o400,
        items: [
          { key: 'a', path: 'conf/a.yaml', mode: 0o600 },
          { key: 'b', path: 'b.txt' },
        ],
      },
    });
    const payload = volumePayload(volume, data({ 'configMap/settings': { a: '1', b: '2', c: '3' } }));
    assert.ok('files' in payload);
    assert.deepEqual(text(payload.files), [
      ['b.txt', '400', '2'],
      ['conf/a.yaml', '600', '1'],
    ]);
  });

  it("keeps a missing mandatory object or key as the kubelet's FailedMount error; an optional one adds nothing", () => {
    const mandatory = planned({
      name: 's',
      secret: { secretName: 'creds', items: [{ key: 'k', path: 'k' }] },
    });
    assert.deepEqual(volumePayload(mandatory, data({ 'secret/creds': undefined })), {
      error: 'secret "creds" not found',
    });
    assert.deepEqual(volumePayload(mandatory, data({ 'secret/creds': { other: 'x' } })), {
      error: 'references non-existent secret key: k',
    });
    const cm = planned({ name: 'c', configMap: { name: 'cfg', items: [{ key: 'k', path: 'k' }] } });
    assert.deepEqual(volumePayload(cm, data({ 'configMap/cfg': undefined })), {
      error: 'configmap "cfg" not found',
    });
    assert.deepEqual(volumePayload(cm, data({ 'configMap/cfg': {} })), {
      error: 'configmap references non-existent config key: k',
    });
    const optional = planned({
      name: 'c',
      configMap: {
        name: 'cfg',
        optional: true,
        items: [
          { key: 'k', path: 'k' },
          { key: 'j', path: 'j' },
        ],
      },
    });
    assert.deepEqual(volumePayload(optional, data({ 'configMap/cfg': undefined })), { files: [] });
    const some = volumePayload(optional, data({ 'configMap/cfg': { j: 'J' } }));
    assert.ok('files' in some);
    assert.deepEqual(text(some.files), [['j', '644', 'J']]);
  });

  it('an error names objects and keys, never data', () => {
    const volume = planned({
      name: 's',
      secret: { secretName: 'creds', items: [{ key: 'missing', path: 'k' }] },
    });
    const payload = volumePayload(volume, data({ 'secret/creds': { password: 'hunter2' } }));
    assert.ok('error' in payload);
    assert.ok(!payload.error.includes('hunter2'));
  });

  it('takes downwardAPI labels, annotations, names and resources as the kubelet formats them', () => {
    const volume = planned({
      name: 'info',
      downwardAPI: {
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" }, mode: 0o400 },
          { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
          {
            path: 'mem',
            resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' },
          },
          { path: 'cpu', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu' } },
        ],
      },
    });
    const payload = volumePayload(volume, new Map());
    assert.ok('files' in payload);
    assert.deepEqual(text(payload.files), [
      ['cpu', '644', '4'],
      ['labels', '644', 'app="web"\ntier="front"'],
      ['mem', '644', '64'],
      ['name', '644', 'web'],
      ['tier', '400', 'front'],
    ]);
  });

  it('mixes projected sources under one defaultMode, later sources over earlier ones at a path', () => {
    const volume = planned({
      name: 'all',
      projected: {
        defaultMode: 0o440,
        sources: [
          { configMap: { name: 'cfg', items: [{ key: 'a', path: 'same' }] } },
          { secret: { name: 'creds', items: [{ key: 'p', path: 'secret/p', mode: 0o400 }] } },
          { downwardAPI: { items: [{ path: 'same', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
          { configMap: { name: 'absent', optional: true } },
        ],
      },
    });
    assert.deepEqual(sourcesToRead(volume), [
      { kind: 'configMap', name: 'cfg' },
      { kind: 'secret', name: 'creds' },
      { kind: 'configMap', name: 'absent' },
    ]);
    const payload = volumePayload(
      volume,
      data({
        [sourceKey('configMap', 'cfg')]: { a: 'A' },
        'secret/creds': { p: 'P' },
        'configMap/absent': undefined,
      }),
    );
    assert.ok('files' in payload);
    assert.deepEqual(text(payload.files), [
      ['same', '440', 'shop'],
      ['secret/p', '400', 'P'],
    ]);
  });

  it('names every bad field: paths, modes, keys, fieldPaths, token sources', () => {
    const result = fileVolume(
      {
        name: 'v',
        projected: {
          defaultMode: -1,
          sources: [
            { configMap: { name: 'c', items: [{ key: 'bad/key', path: '/abs' }] } },
            { downwardAPI: { items: [{ path: '..hidden', fieldRef: { fieldPath: 'status.podIP' } }] } },
            { downwardAPI: { items: [{ path: 'r', resourceFieldRef: { resource: 'limits.cpu' } }] } },
            { serviceAccountToken: { path: '../token', expirationSeconds: 599 } },
          ],
        },
      },
      pod,
    );
    assert.deepEqual(result, {
      reasons: [
        'spec.volumes[v].projected.defaultMode: must be a file mode between 0 and 0777 (511), not -1',
        'spec.volumes[v].projected.sources[0].configMap.items[0].key: "bad/key" is not a valid key (letters, digits, "-", "_" and ".")',
        'spec.volumes[v].projected.sources[0].configMap.items[0].path: must be a relative path, not "/abs"',
        'spec.volumes[v].projected.sources[1].downwardAPI.items[0].path: must not start with "..": "..hidden"',
        'spec.volumes[v].projected.sources[1].downwardAPI.items[0].fieldRef.fieldPath: "status.podIP" is not available in a downwardAPI volume',
        'spec.volumes[v].projected.sources[2].downwardAPI.items[0].resourceFieldRef.containerName: required in a volume',
        'spec.volumes[v].projected.sources[3].serviceAccountToken.path: must not contain a ".." element: "../token"',
        'spec.volumes[v].projected.sources[3].serviceAccountToken.expirationSeconds: must be a whole number of at least 600 (10 minutes), not 599',
      ],
    });
  });

  it("checks paths as the atomic writer's validatePath does", () => {
    assert.equal(filePathProblem('a/b.txt'), undefined);
    assert.equal(filePathProblem('a..b'), undefined);
    assert.equal(filePathProblem(''), 'must not be empty');
    assert.equal(filePathProblem('a/../b'), 'must not contain a ".." element: "a/../b"');
    assert.equal(filePathProblem('..data'), 'must not start with "..": "..data"');
    assert.equal(filePathProblem(`${'x'.repeat(256)}`), 'file names must be at most 255 characters');
    assert.equal(filePathProblem('x/'.repeat(2049)), 'must be at most 4096 characters');
  });
});

describe('file volumes: updates', () => {
  it('takes labels and annotations from the pod again, and tells a changed payload by its digest', () => {
    const volume = planned({
      name: 'info',
      downwardAPI: {
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
        ],
      },
    });
    assert.equal(readsPodMetadata(volume), true);
    assert.equal(readsPodMetadata(planned({ name: 'c', configMap: { name: 'x' } })), false);
    const before = volumePayload(volume, new Map());
    const relabelled = withPodMetadata(volume, {
      ...pod,
      metadata: { ...pod.metadata, labels: { tier: 'back' } },
    });
    const after = volumePayload(relabelled, new Map());
    assert.ok('files' in before && 'files' in after);
    assert.deepEqual(text(after.files), [
      ['labels', '644', 'tier="back"'],
      ['name', '644', 'web'],
    ]);
    assert.notEqual(payloadDigest(before.files), payloadDigest(after.files));
    const again = volumePayload(volume, new Map());
    assert.ok('files' in again);
    assert.equal(payloadDigest(before.files), payloadDigest(again.files));
    const modeOnly = after.files.map((f) => ({ ...f, mode: 0o600 }));
    assert.notEqual(payloadDigest(after.files), payloadDigest(modeOnly), 'a mode change is a change');
  });
});

describe('file volumes: subPath and subPathExpr', () => {
  const container = { env: [{ name: 'POD', value: 'web-0' }] };
  it('expands subPathExpr from the container env, leaving unknown references as written', () => {
    assert.deepEqual(mountSubPath({ subPathExpr: 'logs/$(POD)' }, container, expandEnv), {
      subPath: 'logs/web-0',
    });
    assert.deepEqual(mountSubPath({ subPathExpr: '$(NOPE)' }, container, expandEnv), { subPath: '$(NOPE)' });
    assert.deepEqual(mountSubPath({ subPath: './a//b' }, container, expandEnv), { subPath: 'a/b' });
    assert.deepEqual(mountSubPath({}, container, expandEnv), {});
  });
  it('refuses absolute paths, ".." and both fields at once', () => {
    assert.deepEqual(mountSubPath({ subPath: '/etc' }, container, expandEnv), {
      problem: 'must be a relative path, not "/etc"',
    });
    assert.deepEqual(mountSubPath({ subPathExpr: '$(POD)/../..' }, container, expandEnv), {
      problem: 'must not contain a ".." element: "web-0/../.."',
    });
    assert.deepEqual(mountSubPath({ subPath: 'a', subPathExpr: 'b' }, container, expandEnv), {
      problem: 'subPath and subPathExpr are mutually exclusive',
    });
  });
});
