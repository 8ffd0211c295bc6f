/**
 * Where a CPU profile's time went: a V8 `.cpuprofile` (node --cpu-prof)
 * summarised by package (self time), by file of ours, and by our functions'
 * inclusive time, so that a benchmark's profile says which code costs what.
 *
 * Usage: npx tsx bench/cpu-profile.ts <file.cpuprofile> [--top 25] [--maps <dir>]
 *
 * `--maps <dir>` resolves the frames of a bundle (a packaged function's
 * `.mjs` files) through the source maps of the same build in `<dir>` (each
 * `<file>.mjs.map`, e.g. `.esbuild/.build/functions/` after `serverless
 * package`), so that a minified bundle's time is told by package too.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { bump, fixed, markdownTable } from './support.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber?: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function isProfile(value: unknown): value is CpuProfile {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return Array.isArray(v.nodes) && Array.isArray(v.samples) && Array.isArray(v.timeDeltas);
}

/** `@aws-sdk/client-dynamodb`, `lib/pod`, `node:internal/tls`, `(garbage collector)`... */
export function packageOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  if (url.startsWith('node:')) {
    const path = url.slice('node:'.length).split('/');
    return `node:${path.slice(0, path[0] === 'internal' ? 2 : 1).join('/')}`;
  }
  const ours = /\/(lib|functions|bench|scripts)\/(.*)$/.exec(url);
  if (ours) return `${ours[1]}/${ours[2]?.split('/').slice(0, -1).join('/') || '.'}`;
  return url;
}

function fileOf(url: string): string | undefined {
  const ours = /\/((?:lib|functions|bench)\/.*)$/.exec(url);
  return ours?.[1];
}

export interface ProfileSummary {
  /** Milliseconds of the profile that were not idle. */
  busyMs: number;
  totalMs: number;
  selfByPackage: Map<string, number>;
  selfByFile: Map<string, number>;
  /** Inclusive time of our own functions (lib/, functions/), counted once per sample. */
  inclusiveOurs: Map<string, number>;
}

export function summarise(profile: CpuProfile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfByPackage = new Map<string, number>();
  const selfByFile = new Map<string, number>();
  const inclusiveOurs = new Map<string, number>();
  let busyMs = 0;
  let totalMs = 0;
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    totalMs += ms;
    const node = byId.get(id);
    if (!node) return;
    const { url, functionName } = node.callFrame;
    if (functionName === '(idle)') return;
    busyMs += ms;
    bump(selfByPackage, packageOf(url, functionName), ms);
    const file = fileOf(url);
    if (file) bump(selfByFile, file, ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      const own = frame && fileOf(frame.url);
      if (!frame || !own || !/^(lib|functions)\//.test(own)) continue;
      const key = `${frame.functionName || '(anonymous)'} ${own}:${frame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      bump(inclusiveOurs, key, ms);
    }
  });
  return { busyMs, totalMs, selfByPackage, selfByFile, inclusiveOurs };
}

/**
 * Rewrites each frame of a bundle to its original source (url and line)
 * where `<mapsDir>/<bundle file>.map` maps it; frames without a map stay.
 */
export function resolveThroughSourceMaps(profile: CpuProfile, mapsDir: string): void {
  const maps = new Map<string, SourceMap | undefined>();
  const mapOf = (url: string): SourceMap | undefined => {
    const file = basename(url.replace(/^file:\/\//, ''));
    if (!maps.has(file)) {
      const path = join(mapsDir, `${file}.map`);
      maps.set(file, existsSync(path) ? new SourceMap(JSON.parse(readFileSync(path, 'utf8'))) : undefined);
    }
    return maps.get(file);
  };
  for (const node of profile.nodes) {
    const frame = node.callFrame;
    if (!/\.m?js$/.test(frame.url)) continue;
    const map = mapOf(frame.url);
    const entry = map?.findEntry(frame.lineNumber, frame.columnNumber ?? 0);
    if (!entry || !('originalSource' in entry)) continue;
    frame.url = entry.originalSource;
    frame.lineNumber = entry.originalLine;
  }
}

function table(title: string, entries: Map<string, number>, busyMs: number, top: number): string {
  const rows = [...entries]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => [key, fixed(ms, 0), `${fixed((ms / busyMs) * 100, 1)} %`]);
  return [`#### ${title}`, '', markdownTable(['what', 'ms', 'of busy'], rows)].join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' }, maps: { type: 'string' } },
  });
  const [file] = positionals;
  if (!file) throw new Error('usage: npx tsx bench/cpu-profile.ts <file.cpuprofile> [--top 25]');
  const top = Number(values.top);
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (!isProfile(parsed)) throw new Error(`${file} is not a V8 CPU profile`);
  if (values.maps) resolveThroughSourceMaps(parsed, values.maps);
  const s = summarise(parsed);
  process.stdout.write(
    [
      `${file}: ${fixed(s.totalMs / 1000)} s profiled, ${fixed(s.busyMs / 1000)} s busy`,
      '',
      table('Self time by package', s.selfByPackage, s.busyMs, top),
      '',
      table('Self time by file of ours', s.selfByFile, s.busyMs, top),
      '',
      table('Inclusive time of our functions', s.inclusiveOurs, s.busyMs, top),
      '',
    ].join('\n'),
  );
}

main();
