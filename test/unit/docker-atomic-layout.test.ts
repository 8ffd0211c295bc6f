import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  atomicLayout,
  digestOf,
  swapCommand,
  timestampDirName,
  updateLayout,
  visibleNames,
} from '../../lib/provider/docker/atomic-layout.ts';
import { tarArchive } from '../../lib/provider/docker/tar-archive.ts';

describe("docker provider: a file volume in the atomic writer's layout", () => {
  const files = [
    { path: 'conf/app.yaml', mode: 0o600, content: Buffer.from('a: 1\n') },
    { path: 'conf/deep/x', mode: 0o644, content: Buffer.from('x') },
    { path: 'token', mode: 0o400, content: Buffer.from('t') },
  ];

  it('names the timestamped directory as the kubelet does', () => {
    assert.equal(
      timestampDirName(new Date('2026-01-02T03:04:05.678Z'), 'ab12'),
      '..2026_01_02_03_04_05.ab12',
    );
  });

  it('puts the files in the timestamped directory, then ..data, then one link per top-level name', () => {
    const layout = atomicLayout(files, '..ts');
    assert.deepEqual(
      layout.map((e) => [e.type, e.name, e.type === 'symlink' ? e.target : e.mode.toString(8)]),
      [
        ['dir', '..ts', '755'],
        ['dir', '..ts/conf', '755'],
        ['dir', '..ts/conf/deep', '755'],
        ['file', '..ts/conf/app.yaml', '600'],
        ['file', '..ts/conf/deep/x', '644'],
        ['file', '..ts/token', '400'],
        ['symlink', '..data', '..ts'],
        ['symlink', 'conf', '..data/conf'],
        ['symlink', 'token', '..data/token'],
      ],
    );
  });

  it('is an archive tar extracts with the modes, links and long names asked for', () => {
    const long = `${'d'.repeat(120)}/${'f'.repeat(120)}`;
    const dir = mkdtempSync(join(tmpdir(), 'svk-layout-'));
    try {
      const archive = tarArchive(
        atomicLayout([...files, { path: long, mode: 0o640, content: Buffer.alloc(700, 7) }], '..2026_x'),
        new Date(0),
      );
      writeFileSync(join(dir, 'a.tar'), archive);
      const out = join(dir, 'out');
      execFileSync('mkdir', [out]);
      execFileSync('tar', ['-xpf', join(dir, 'a.tar'), '-C', out]);
      assert.equal(readlinkSync(join(out, '..data')), '..2026_x');
      assert.equal(readlinkSync(join(out, 'conf')), '..data/conf');
      assert.equal(readFileSync(join(out, 'conf/app.yaml'), 'utf8'), 'a: 1\n');
      assert.equal(lstatSync(join(out, '..2026_x/conf/app.yaml')).mode & 0o777, 0o600);
      assert.equal(lstatSync(join(out, '..2026_x/token')).mode & 0o777, 0o400);
      assert.equal(readFileSync(join(out, long)).length, 700);
      assert.equal(lstatSync(join(out, '..2026_x', long)).mode & 0o777, 0o640);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('docker provider: an update of a file volume', () => {
  const v1 = [
    { path: 'a', mode: 0o644, content: Buffer.from('one') },
    { path: 'gone/x', mode: 0o644, content: Buffer.from('x') },
  ];
  const v2 = [
    { path: 'a', mode: 0o600, content: Buffer.from('two') },
    { path: '.hidden', mode: 0o644, content: Buffer.from('h') },
  ];

  it('names the timestamped directory after the digest, which reads back from it', () => {
    assert.equal(digestOf(timestampDirName(new Date(0), '0123abcd')), '0123abcd');
    assert.equal(digestOf('..data'), undefined);
  });

  it('writes the new directory and ..data_tmp, then the swap renames it over ..data and tidies up', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svk-swap-'));
    try {
      const extract = (entries: Parameters<typeof tarArchive>[0]) => {
        writeFileSync(join(dir, 'a.tar'), tarArchive(entries, new Date(0)));
        execFileSync('tar', ['-xpf', join(dir, 'a.tar'), '-C', join(dir, 'v')]);
      };
      execFileSync('mkdir', [join(dir, 'v')]);
      extract(atomicLayout(v1, '..2026_01_01_00_00_00.aaaa'));
      assert.equal(readFileSync(join(dir, 'v/a'), 'utf8'), 'one');
      const update = updateLayout(v2, '..2026_01_01_00_01_00.bbbb');
      assert.deepEqual(
        update.filter((e) => e.type === 'symlink').map((e) => e.name),
        ['..data_tmp'],
        'an update writes no link a reader goes through',
      );
      extract(update);
      assert.equal(readFileSync(join(dir, 'v/a'), 'utf8'), 'one', 'nothing changed before the swap');
      const [cmd, ...args] = swapCommand('..2026_01_01_00_01_00.bbbb', visibleNames(v2), join(dir, 'v'));
      execFileSync(cmd ?? 'sh', args);
      assert.equal(readlinkSync(join(dir, 'v/..data')), '..2026_01_01_00_01_00.bbbb');
      assert.equal(readFileSync(join(dir, 'v/a'), 'utf8'), 'two');
      assert.equal(readFileSync(join(dir, 'v/.hidden'), 'utf8'), 'h');
      assert.deepEqual(
        readdirSync(join(dir, 'v')).sort(),
        ['..2026_01_01_00_01_00.bbbb', '..data', '.hidden', 'a'],
        'the old directory, the old link gone and ..data_tmp are gone',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
