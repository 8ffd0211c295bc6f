/**
 * No function loads `@kubernetes/client-node` at cold start: importing it
 * costs about 115 ms of CPU (its ObjectSerializer's type map reaches every
 * model class), more than the whole cold-start budget leaves for it. The
 * functions use our own client (lib/kube/client.ts); client-node's types are
 * imported with `import type`, which esbuild erases, and its KubeConfig only
 * by a dynamic `import()` when a kubeconfig is loaded
 * (lib/kube/client-node-kubeconfig.ts, from kubeconfig.ts). Each function's static import graph
 * is followed with TypeScript's parser (test/support/source-graph.ts); a
 * value import of client-node anywhere in it fails, naming the chain.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filesUnder, packageImports, ROOT, reachableWithin } from '../support/source-graph.ts';

const CLIENT_NODE = '@kubernetes/client-node';
/** Deeper than any chain of imports in the repository. */
const ALL_HOPS = 1_000;

function isClientNode(specifier: string): boolean {
  return specifier === CLIENT_NODE || specifier.startsWith(`${CLIENT_NODE}/`);
}

/** Each file a function reaches that imports client-node's values, with the chain of imports to it. */
function clientNodeImporters(fn: string): string[][] {
  const chains: string[][] = [];
  for (const [file, chain] of reachableWithin(fn, ALL_HOPS)) {
    if (packageImports(file).some(isClientNode)) chains.push(chain);
  }
  return chains;
}

describe('function bundles do not import @kubernetes/client-node at run time', () => {
  const functions = filesUnder('functions', ['.ts']);

  it('finds the functions, and sees a value import of client-node where there is one', () => {
    assert.ok(functions.length >= 8, `functions under ${ROOT}/functions: ${functions.join(', ')}`);
    // The tooling clients import client-node's values: the check must see that.
    assert.ok(packageImports('lib/kube/tooling-clients.ts').some(isClientNode));
    assert.deepEqual(clientNodeImporters('lib/kube/tooling-clients.ts')[0], ['lib/kube/tooling-clients.ts']);
    // A type-only import is not one.
    assert.equal(packageImports('lib/kube/core-api.ts').some(isClientNode), false);
  });

  for (const fn of functions) {
    it(`${fn} reaches no value import of client-node`, () => {
      const chains = clientNodeImporters(fn).map((chain) => chain.join(' → '));
      assert.deepEqual(chains, []);
    });
  }
});
