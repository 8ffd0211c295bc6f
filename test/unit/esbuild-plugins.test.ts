/**
 * The functions' esbuild plugins (scripts/esbuild-plugins.ts) in a real
 * esbuild build, as serverless-esbuild runs one per handler into a build
 * folder it keeps between builds.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { build } from 'esbuild';
import { chunksNamedAfterHandler, staleChunksRemoved } from '../../scripts/esbuild-plugins.ts';

const work = mkdtempSync(join(tmpdir(), 'svk-esbuild-plugins-'));
after(() => rmSync(work, { recursive: true, force: true }));

describe('staleChunksRemoved', () => {
  it("deletes the handler's files of an earlier build, and no other handler's", async () => {
    const source = join(work, 'functions');
    const outdir = join(work, '.build', 'functions');
    mkdirSync(source, { recursive: true });
    mkdirSync(outdir, { recursive: true });
    writeFileSync(
      join(source, 'tick.ts'),
      "export const handler = async () => (await import('./part.ts')).part;\n",
    );
    writeFileSync(join(source, 'part.ts'), 'export const part = 1;\n');
    for (const stale of ['tick.part-OLD.mjs', 'tick.part-OLD.mjs.map', 'tick.mjs', 'pod-sync.chunk-KEEP.mjs'])
      writeFileSync(join(outdir, stale), 'stale\n');
    await build({
      entryPoints: [join(source, 'tick.ts')],
      outdir,
      bundle: true,
      format: 'esm',
      platform: 'node',
      splitting: true,
      outExtension: { '.js': '.mjs' },
      plugins: [chunksNamedAfterHandler, staleChunksRemoved],
      logLevel: 'silent',
    });
    const files = readdirSync(outdir).sort();
    assert.ok(
      !files.includes('tick.part-OLD.mjs') && !files.includes('tick.part-OLD.mjs.map'),
      files.join(' '),
    );
    assert.ok(files.includes('pod-sync.chunk-KEEP.mjs'), 'another handler keeps its files');
    assert.ok(existsSync(join(outdir, 'tick.mjs')), 'the new handler file is written');
    assert.ok(
      files.some((f) => /^tick\.part-[A-Z0-9]+\.mjs$/.test(f) && f !== 'tick.part-OLD.mjs'),
      `the new chunk is written: ${files.join(' ')}`,
    );
  });
});
