import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { ContainerDefinition } from '@aws-sdk/client-ecs';
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import type { SecretValue } from '../../lib/provider/ecs/env-partition.ts';
import {
  isTaskTranslationError,
  MAX_DEFINITION_CHARS,
  type TaskTranslation,
  type TranslationSettings,
  translatePod as translate,
} from '../../lib/provider/ecs/task-translation.ts';
import { VOLUME_WRITER_NAME, VOLUME_WRITER_ROOT } from '../../lib/provider/ecs/volume-writer.ts';
import type { FileProjection } from '../../lib/provider/file-volumes.ts';
import { ApiModel } from '../support/ecs-sim/api-model.ts';
import { dependencyProblems, taskDefinitionProblems } from '../support/ecs-sim/sim-checks.ts';

/**
 * ConfigMap, Secret, downwardAPI and projected volumes on Fargate: the
 * volume writer container and what it carries where (definition, override,
 * SSM), its script run for real (busybox and dash) on what ECS's agent
 * would hand it, the refusals and the limits.
 */

const ECS_MODEL = ApiModel.load('ecs-2014-11-13');
const SECRET = 'tls-key-7f3a9c-do-not-leak';

/** Stands in for SecretParameters' namer, remembering the values as SSM would hold them. */
const parameters = new Map<string, string>();
const settings: TranslationSettings = {
  familyPrefix: 'svk-prod',
  executionRoleArn: 'arn:aws:iam::123456789012:role/svk-task-execution',
  logGroup: '/svk/prod/pods',
  region: 'eu-west-1',
  cpuArchitecture: 'X86_64',
  registryCredentials: {},
  secretParameterName: (v: SecretValue) => {
    const mac = createHash('sha256').update(v.value).digest('hex').slice(0, 32);
    const name = `/svk/prod/pod-secrets/${v.namespace}/${v.secret}/${v.key}/${mac}`;
    parameters.set(name, v.value);
    return name;
  },
  volumeImage: 'public.ecr.aws/docker/library/busybox:1.36.1',
};

function translatePod(pod: V1Pod, files?: Map<string, FileProjection[]>): TaskTranslation {
  const t = translate(pod, { ...settings, ...(files ? { volumeFiles: files } : {}) });
  const body = JSON.parse(JSON.stringify({ ...t.definition, family: t.family }));
  assert.deepEqual(ECS_MODEL.validate('RegisterTaskDefinition', body), [], 'fits the API model');
  assert.deepEqual([...taskDefinitionProblems(body), ...dependencyProblems(body)], [], "and Fargate's rules");
  return t;
}

function pod(
  volumes: V1Volume[],
  containers: V1Container[],
  extra: Partial<NonNullable<V1Pod['spec']>> = {},
  labels: Record<string, string> = { app: 'web' },
): V1Pod {
  return {
    metadata: { namespace: 'shop', name: 'web-1', uid: '00000000-0000-4000-8000-000000000001', labels },
    spec: { nodeName: 'vk-1', volumes, containers, ...extra },
  };
}

const file = (path: string, content: string | Buffer, mode: number, source: FileProjection['source']) => ({
  path,
  mode,
  content: Buffer.isBuffer(content) ? content : Buffer.from(content),
  source,
});

const app: V1Container = {
  name: 'app',
  image: 'shop/web:1',
  volumeMounts: [
    { name: 'cfg', mountPath: '/etc/app' },
    { name: 'tls', mountPath: '/etc/tls' },
    { name: 'info', mountPath: '/etc/info' },
    { name: 'mix', mountPath: '/etc/mix' },
    { name: 'default-token-x7k2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
  ],
};
const volumes: V1Volume[] = [
  {
    name: 'cfg',
    configMap: {
      name: 'settings',
      defaultMode: 0o440,
      items: [{ key: 'a', path: 'conf/a.txt', mode: 0o600 }],
    },
  },
  { name: 'tls', secret: { secretName: 'web-tls', defaultMode: 0o400 } },
  { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
  {
    name: 'mix',
    projected: {
      sources: [
        { configMap: { name: 'settings', items: [{ key: 'b', path: 'b' }] } },
        { secret: { name: 'web-tls', items: [{ key: 'tls.key', path: 'creds/key' }] } },
        { downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  },
  // The v1.20 ServiceAccount admission's token Secret volume: a Secret volume like any other.
  { name: 'default-token-x7k2p', secret: { secretName: 'default-token-x7k2p', defaultMode: 0o420 } },
];
/** A TLS key bigger than one SSM parameter (4096 characters of base64), with bytes that are not text. */
const bigKey = Buffer.concat([Buffer.from(`${SECRET}\n`), Buffer.alloc(7000, 0xfe), Buffer.from([0, 1, 2])]);
const filesRead = () =>
  new Map<string, FileProjection[]>([
    ['cfg', [file('conf/a.txt', 'alpha\n', 0o600, 'configMap')]],
    ['tls', [file('tls.crt', 'CERT', 0o400, 'secret'), file('tls.key', bigKey, 0o400, 'secret')]],
    ['info', [file('labels', 'app="web"', 0o644, 'downwardAPI')]],
    [
      'mix',
      [
        file('b', 'beta', 0o644, 'configMap'),
        file('creds/key', SECRET, 0o644, 'secret'),
        file('ns', 'shop', 0o644, 'downwardAPI'),
      ],
    ],
    [
      'default-token-x7k2p',
      [
        file('ca.crt', 'CA', 0o644, 'secret'),
        file('namespace', 'shop', 0o644, 'secret'),
        file('token', `token-${SECRET}`, 0o644, 'secret'),
      ],
    ],
  ]);

const writerOf = (t: TaskTranslation): ContainerDefinition => {
  const w = t.definition.containerDefinitions?.find((c) => c.name === VOLUME_WRITER_NAME);
  assert.ok(w, 'the volume writer is in the task');
  return w;
};

describe('file volumes on Fargate: the volume writer', () => {
  it('runs first, non-essential; every container waits for it and mounts the volumes read-only', () => {
    const init: V1Container = {
      name: 'migrate',
      image: 'shop/migrate:1',
      volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }],
    };
    const t = translatePod(pod(volumes, [app], { initContainers: [init] }), filesRead());
    const [writer, first, main] = t.definition.containerDefinitions ?? [];
    assert.equal(writer?.name, VOLUME_WRITER_NAME);
    assert.equal(writer?.essential, false);
    assert.equal(writer?.image, settings.volumeImage);
    assert.deepEqual(writer?.entryPoint, ['sh', '-c']);
    assert.deepEqual(
      writer?.mountPoints,
      volumes.map((v, i) => ({
        sourceVolume: v.name,
        containerPath: `${VOLUME_WRITER_ROOT}/${i}`,
        readOnly: false,
      })),
    );
    assert.deepEqual(first?.dependsOn, [{ containerName: VOLUME_WRITER_NAME, condition: 'SUCCESS' }]);
    assert.deepEqual(main?.dependsOn, [{ containerName: 'migrate', condition: 'SUCCESS' }]);
    assert.ok(
      main?.mountPoints?.every((m) => m.readOnly === true),
      'read-only, as the kubelet mounts them',
    );
    assert.deepEqual(
      t.definition.volumes?.map((v) => v.name),
      volumes.map((v) => v.name),
    );
    // Without init containers, the app containers wait for the writer.
    const alone = translatePod(pod(volumes, [app]), filesRead());
    assert.deepEqual(alone.definition.containerDefinitions?.[1]?.dependsOn, [
      { containerName: VOLUME_WRITER_NAME, condition: 'SUCCESS' },
    ]);
  });

  it("carries a ConfigMap's files in the definition, the downward API's in the override, a Secret's in SSM only", () => {
    const t = translatePod(pod(volumes, [app]), filesRead());
    const writer = writerOf(t);
    const env = new Map((writer.environment ?? []).map((e) => [e.name, e.value ?? '']));
    const decoded = [...env.values()].map((v) => Buffer.from(v, 'base64').toString('latin1'));
    assert.ok(decoded.includes('alpha\n') && decoded.includes('beta'), 'ConfigMap files in the definition');
    const override = t.containerOverrides.find((o) => o.name === VOLUME_WRITER_NAME);
    assert.deepEqual(
      override?.environment?.map((e) => Buffer.from(e.value ?? '', 'base64').toString()),
      ['app="web"', 'shop'],
    );
    // The big key takes several parameters of at most 4096 characters; their concatenation is the key.
    const refs = writer.secrets ?? [];
    const keyParts = refs.filter((r) => r.name?.startsWith('SVK_1_1_'));
    assert.equal(keyParts.length, Math.ceil(bigKey.toString('base64').length / 4096));
    const joined = keyParts.map((r) => parameters.get(r.valueFrom ?? '') ?? '').join('');
    assert.deepEqual(Buffer.from(joined, 'base64'), bigKey);
    for (const r of refs) assert.ok((parameters.get(r.valueFrom ?? '') ?? '').length <= 4096);
    assert.deepEqual(
      t.secrets.map((s) => s.parameter).sort(),
      [...new Set(refs.map((r) => r.valueFrom ?? ''))].sort(),
      'every parameter the definition names is stored first',
    );
    // The Secret's bytes, plain or base64, are in neither the definition nor the overrides.
    const seen = JSON.stringify([t.definition, t.containerOverrides]);
    for (const form of [
      SECRET,
      Buffer.from(SECRET).toString('base64'),
      bigKey.toString('base64').slice(0, 40),
    ])
      assert.ok(
        !seen.includes(form),
        `no Secret bytes (${form.slice(0, 12)}...) in the definition or override`,
      );
    assert.ok(!seen.includes(Buffer.from(`token-${SECRET}`).toString('base64')));
  });

  it('is the same shape whatever the files hold: a new ConfigMap, Secret or label changes the family only', () => {
    const a = translatePod(pod(volumes, [app]), filesRead());
    const changed = filesRead();
    changed.set('cfg', [file('conf/a.txt', 'ALPHA', 0o600, 'configMap')]);
    changed.set('tls', [file('tls.key', 'other', 0o400, 'secret')]);
    changed.set('info', [file('labels', 'app="web"\ntier="x"', 0o644, 'downwardAPI')]);
    const b = translatePod(pod(volumes, [app], {}, { app: 'web', tier: 'x' }), changed);
    assert.notEqual(a.family, b.family);
    assert.equal(a.shape, b.shape);
    assert.equal(translatePod(pod(volumes, [app])).shape, a.shape, 'the shape needs no file read');
    const image = translatePod(pod(volumes, [{ ...app, image: 'shop/web:2' }]), filesRead());
    assert.notEqual(image.shape, a.shape, 'another image is another shape');
  });

  it('leaves the projected token volume of a 1.21+ API server unmounted, as before', () => {
    const t = translatePod(
      pod(
        [
          {
            name: 'kube-api-access-abcde',
            projected: { sources: [{ serviceAccountToken: { path: 'token' } }] },
          },
        ],
        [
          {
            ...app,
            volumeMounts: [
              { name: 'kube-api-access-abcde', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
            ],
          },
        ],
      ),
    );
    assert.equal(t.definition.volumes, undefined);
    assert.equal(t.definition.containerDefinitions?.length, 1, 'no volume writer');
  });
});

describe('file volumes on Fargate: refused by name', () => {
  const refused = (p: V1Pod, files?: Map<string, FileProjection[]>): string[] => {
    try {
      translate(p, { ...settings, ...(files ? { volumeFiles: files } : {}) });
    } catch (err) {
      assert.ok(isTaskTranslationError(err));
      return [...err.reasons];
    }
    assert.fail('translated');
  };

  it("subPath, a token the pod asks for, bad paths, modes and keys, and the writer's name", () => {
    const reasons = refused(
      pod(
        [
          {
            name: 'cfg',
            configMap: { name: 'c', defaultMode: 0o1777, items: [{ key: '../x', path: '../escape' }] },
          },
          {
            name: 'tok',
            projected: { sources: [{ serviceAccountToken: { path: 'token', audience: 'vault' } }] },
          },
          { name: 'sec', secret: { secretName: 's', items: [{ key: 'k', path: '/abs', mode: -1 }] } },
        ],
        [
          {
            name: VOLUME_WRITER_NAME,
            image: 'x',
            volumeMounts: [
              { name: 'cfg', mountPath: '/etc/app.conf', subPath: 'app.conf' },
              { name: 'tok', mountPath: '/tok' },
            ],
          },
        ],
      ),
    );
    assert.deepEqual(reasons, [
      'spec.volumes[cfg].configMap.defaultMode: must be a file mode between 0 and 0777 (511), not 1023',
      'spec.volumes[cfg].configMap.items[0].key: "../x" is not a valid key (letters, digits, "-", "_" and ".")',
      'spec.volumes[cfg].configMap.items[0].path: must not contain a ".." element: "../escape"',
      'spec.volumes[tok].projected.sources[0].serviceAccountToken: a Fargate task gets no service account token (its files are written once, at start, and a token must be refreshed)',
      'spec.volumes[sec].secret.items[0].path: must be a relative path, not "/abs"',
      'spec.volumes[sec].secret.items[0].mode: must be a file mode between 0 and 0777 (511), not -1',
      `spec.containers[${VOLUME_WRITER_NAME}].name: ${VOLUME_WRITER_NAME} is the name of the container that writes the pod's file volumes on Fargate`,
      `spec.containers[${VOLUME_WRITER_NAME}].volumeMounts[cfg].subPath: an ECS mount point mounts a whole task volume: Fargate cannot mount one file or directory of it`,
    ]);
  });

  it("ConfigMap files over the task definition's 64 KiB, and downward files over the 8 KiB of overrides", () => {
    const big = new Map([['cfg', [file('big', Buffer.alloc(60_000, 'x'), 0o644, 'configMap')]]]);
    const cfgPod = pod([{ name: 'cfg', configMap: { name: 'c' } }], [{ name: 'a', image: 'x' }]);
    const [definition] = refused(cfgPod, big);
    assert.match(definition ?? '', /^spec\.volumes: the pod's file volumes \(ConfigMap files 60000 bytes/);
    assert.match(definition ?? '', new RegExp(`more than ECS's ${MAX_DEFINITION_CHARS}$`));
    const annotations = { note: 'y'.repeat(7000) };
    const downward = pod(
      [
        {
          name: 'info',
          downwardAPI: { items: [{ path: 'a', fieldRef: { fieldPath: 'metadata.annotations' } }] },
        },
      ],
      [{ name: 'a', image: 'x' }],
    );
    downward.metadata = { ...downward.metadata, annotations };
    const [override] = refused(
      downward,
      new Map([['info', [file('a', `note="${annotations.note}"`, 0o644, 'downwardAPI')]]]),
    );
    assert.match(
      override ?? '',
      /downwardAPI files \(7007 bytes, base64\) take \d+ characters, more than RunTask's 8192/,
    );
  });
});

describe('the volume writer script, run for real', () => {
  const roots: string[] = [];
  after(() => {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

  /** Runs the writer's command under `shell` with the environment ECS's agent would give it (definition, override, SSM). */
  function runWriter(shell: string[], t: TaskTranslation, count: number): string {
    const writer = writerOf(t);
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    for (const e of writer.environment ?? []) env[e.name ?? ''] = e.value ?? '';
    for (const e of t.containerOverrides.find((o) => o.name === VOLUME_WRITER_NAME)?.environment ?? [])
      env[e.name ?? ''] = e.value ?? '';
    for (const s of writer.secrets ?? []) env[s.name ?? ''] = parameters.get(s.valueFrom ?? '') ?? '';
    const root = mkdtempSync(join(tmpdir(), 'svk-writer-'));
    roots.push(root);
    for (let i = 0; i < count; i++) mkdirSync(join(root, String(i)));
    const [script, name] = writer.command ?? [];
    const out = execFileSync(shell[0] ?? 'sh', [...shell.slice(1), '-c', script ?? '', name ?? '', root], {
      env,
      encoding: 'utf8',
    });
    assert.ok(!out.includes(SECRET), 'the writer prints no Secret bytes');
    return root;
  }

  const shells = [['dash'], ['busybox', 'sh']].filter(([bin]) =>
    ['/usr/bin/', '/bin/'].some((d) => existsSync(`${d}${bin}`)),
  );
  it('has a shell to run under', () => assert.ok(shells.length > 0, 'dash or busybox is installed'));
  for (const shell of shells) {
    it(`writes every file with its mode in the atomic writer's layout (${shell.join(' ')})`, () => {
      const files = filesRead();
      files.set('info', [
        file('labels', 'app="web"\n', 0o644, 'downwardAPI'),
        file('odd name\nline', 'x', 0o640, 'downwardAPI'),
      ]);
      files.get('cfg')?.push(file('empty', '', 0o644, 'configMap'));
      const root = runWriter(shell, translatePod(pod(volumes, [app]), files), volumes.length);
      const at = (v: number, path: string) => join(root, String(v), path);
      assert.equal(readFileSync(at(0, 'conf/a.txt'), 'utf8'), 'alpha\n');
      assert.equal(lstatSync(at(0, 'conf/a.txt')).mode & 0o777, 0o600);
      assert.equal(readFileSync(at(0, 'empty'), 'utf8'), '');
      assert.ok(lstatSync(at(0, 'conf')).isSymbolicLink() && readlinkSync(at(0, 'conf')) === '..data/conf');
      assert.match(readlinkSync(at(0, '..data')), /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.1$/);
      assert.deepEqual(readFileSync(at(1, 'tls.key')), bigKey);
      assert.equal(lstatSync(join(root, '1', readlinkSync(at(1, '..data')), 'tls.key')).mode & 0o777, 0o400);
      assert.equal(readFileSync(at(2, 'labels'), 'utf8'), 'app="web"\n');
      assert.equal(readFileSync(at(2, 'odd name\nline'), 'utf8'), 'x');
      assert.equal(readFileSync(at(3, 'creds/key'), 'utf8'), SECRET);
      assert.equal(readFileSync(at(3, 'ns'), 'utf8'), 'shop');
      assert.equal(readFileSync(at(4, 'token'), 'utf8'), `token-${SECRET}`);
    });
  }
  it('leaves a volume with no files (a missing optional ConfigMap) an empty directory with its ..data', () => {
    const [shell] = shells;
    if (!shell) return;
    const p = pod(
      [{ name: 'opt', configMap: { name: 'later', optional: true } }],
      [{ name: 'a', image: 'x' }],
    );
    const root = runWriter(shell, translatePod(p, new Map([['opt', []]])), 1);
    assert.ok(lstatSync(join(root, '0', '..data')).isSymbolicLink());
    assert.ok(!existsSync(join(root, '0', 'key')));
  });
});
