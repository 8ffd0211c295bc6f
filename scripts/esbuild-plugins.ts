/**
 * esbuild plugins for the functions' bundles: serverless.yml names this file
 * (custom.esbuild.plugins), serverless-esbuild loads it and builds each
 * function's handler on its own with them.
 */
import { readdirSync, rmSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import type { Plugin, PluginBuild } from 'esbuild';

/** The handler file one build bundles (serverless-esbuild builds one entry at a time). */
function entryOf(build: PluginBuild): string | undefined {
  const entries = build.initialOptions.entryPoints;
  const first: unknown = Array.isArray(entries) ? entries[0] : undefined;
  if (typeof first === 'string') return first;
  if (typeof first === 'object' && first !== null && 'in' in first && typeof first.in === 'string')
    return first.in;
  return undefined;
}

/**
 * Names a build's chunks after its handler (`pod-sync.factory-<hash>.mjs`).
 * serverless-esbuild leaves every file of the build folder in every
 * function's zip except the other handlers' files, which it finds by their
 * name (`functions/heartbeat.` and so on): with this prefix, each zip holds
 * its own handler's chunks only, instead of every function's.
 */
export const chunksNamedAfterHandler: Plugin = {
  name: 'chunks-named-after-handler',
  setup(build) {
    const entry = entryOf(build);
    if (!entry) return;
    build.initialOptions.chunkNames = `${basename(entry, extname(entry))}.[name]-[hash]`;
  },
};

/**
 * Deletes the files an earlier build of the same handler left in the build
 * folder (`<handler>.*`), before this build writes its own. The folder is
 * kept between builds (keepOutputDirectory) and chunk names carry a content
 * hash, so without this a second `serverless package` in the same checkout
 * zips the previous build's chunks beside the new ones. Only this handler's
 * files: serverless-esbuild builds the handlers at the same time into one
 * folder.
 */
export const staleChunksRemoved: Plugin = {
  name: 'stale-chunks-removed',
  setup(build) {
    const entry = entryOf(build);
    const outdir = build.initialOptions.outdir;
    if (!entry || !outdir) return;
    const prefix = `${basename(entry, extname(entry))}.`;
    build.onStart(() => {
      let names: string[];
      try {
        names = readdirSync(outdir);
      } catch {
        return;
      }
      for (const name of names) if (name.startsWith(prefix)) rmSync(join(outdir, name), { force: true });
    });
  },
};

const KUBERNETES_CLIENT = '/node_modules/@kubernetes/client-node/';

/**
 * Marks `@kubernetes/client-node`'s modules free of side effects, as its
 * package.json does not, so that esbuild leaves out the modules nothing of
 * ours uses (exec, attach, port-forward, cp, informers, metrics and their
 * dependencies: WebSocket, tar, SOCKS, proxies). Its modules only define
 * classes and functions: dropping one that is never imported changes nothing.
 */
export const kubernetesClientWithoutSideEffects: Plugin = {
  name: 'kubernetes-client-without-side-effects',
  setup(build) {
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === KUBERNETES_CLIENT) return undefined;
      const ours =
        args.path.startsWith('@kubernetes/client-node') || args.importer.includes(KUBERNETES_CLIENT);
      if (!ours) return undefined;
      const result = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: KUBERNETES_CLIENT,
      });
      if (result.errors.length > 0 || !result.path.includes(KUBERNETES_CLIENT)) return result;
      return { ...result, sideEffects: false };
    });
  },
};

/**
 * node-fetch 2 (which `@kubernetes/client-node` sends its requests with)
 * imports whatwg-url only for `Url.URL || whatwgUrl.URL`, and Node's own URL
 * is always there: this gives it Node's URL instead of bundling whatwg-url,
 * whose punycode tables (tr46) are a tenth of a bundle and whose `punycode`
 * import makes Node print a deprecation warning at every cold start.
 */
export const whatwgUrlFromNode: Plugin = {
  name: 'whatwg-url-from-node',
  setup(build) {
    build.onResolve({ filter: /^whatwg-url$/ }, () => ({ path: 'whatwg-url', namespace: 'node-url' }));
    build.onLoad({ filter: /.*/, namespace: 'node-url' }, () => ({
      contents: 'export default { URL: globalThis.URL, URLSearchParams: globalThis.URLSearchParams };',
      loader: 'js',
    }));
  },
};

/**
 * Native add-ons that optional dependencies try to load (ssh2's crypto
 * binding and cpu-features, pulled in by dockerode for SSH engines, which the
 * Docker provider does not use) stay out of the bundle whether or not npm
 * built them (allowScripts in package.json): their require throws at run
 * time, and the callers, which wrap it in try/catch, fall back to
 * JavaScript, as they do wherever the add-on was not built. An empty module
 * instead would have ssh2 take its binding for available. Without this,
 * esbuild stops at a file that was never built.
 */
export const nativeAddonsLeftOut: Plugin = {
  name: 'native-addons-left-out',
  setup(build) {
    build.onResolve({ filter: /^cpu-features$|\.node$/ }, (args) => ({
      path: args.path,
      namespace: 'native-addon-left-out',
    }));
    build.onLoad({ filter: /.*/, namespace: 'native-addon-left-out' }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`native add-on ${args.path} is not bundled`)});`,
      loader: 'js',
    }));
  },
};

export default [
  chunksNamedAfterHandler,
  staleChunksRemoved,
  kubernetesClientWithoutSideEffects,
  whatwgUrlFromNode,
  nativeAddonsLeftOut,
];
