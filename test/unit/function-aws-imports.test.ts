/**
 * No function loads an AWS SDK client at cold start: importing the DynamoDB
 * or the SQS client costs about 50-60 ms of CPU each (docs/benchmarks.md,
 * "Cold start"), and the functions' every-invocation calls (the state
 * table's, the tick queue's) go on our own wire (lib/aws/aws-json-wire.ts).
 * What still needs the SDK (EventBridge's PutEvents, cluster credentials
 * from Secrets Manager, SSM or EKS, a provider's clients, the credential
 * provider chain outside Lambda, DynamoDB's endpoint rules for FIPS and
 * other partitions) is loaded by a dynamic `import()` when first used, and
 * types are imported with `import type`, which esbuild erases. Each
 * function's static import graph is followed with TypeScript's parser
 * (test/support/source-graph.ts); a value import of an `@aws-sdk/` or
 * `@smithy/` package (the SDK clients' HTTP handler, signer and core)
 * anywhere in it fails, naming the chain.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filesUnder, packageImports, reachableWithin } from '../support/source-graph.ts';

/** Deeper than any chain of imports in the repository. */
const ALL_HOPS = 1_000;

function isSdkClientPackage(specifier: string): boolean {
  return specifier.startsWith('@aws-sdk/') || specifier.startsWith('@smithy/');
}

/** The clients whose calls went onto our wire: not even the ECS function, which needs ECS's, loads these. */
const WIRE_SERVICES = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', '@aws-sdk/client-sqs'];

/** The ECS provider's own function builds its ECS, CloudWatch Logs and SSM clients at cold start. */
const ECS_FUNCTION = 'functions/ecs-task-state.ts';

/** Each file a function reaches that imports an SDK package's values, with the chain of imports to it. */
function sdkImporters(fn: string, forbidden: (specifier: string) => boolean = isSdkClientPackage): string[] {
  const chains: string[] = [];
  for (const [file, chain] of reachableWithin(fn, ALL_HOPS)) {
    const packages = packageImports(file).filter(forbidden);
    if (packages.length > 0) chains.push(`${chain.join(' → ')} (${packages.join(', ')})`);
  }
  return chains;
}

describe('function bundles load no AWS SDK client at cold start', () => {
  const functions = filesUnder('functions', ['.ts']);

  it('sees a value import of an SDK client where there is one, and none in a type-only import', () => {
    assert.ok(functions.length >= 8);
    assert.ok(packageImports('lib/state/dynamodb-clients.ts').includes('@aws-sdk/client-dynamodb'));
    assert.match(
      sdkImporters('lib/state/dynamodb-clients.ts')[0] ?? '',
      /^lib\/state\/dynamodb-clients\.ts \(/,
    );
    assert.equal(packageImports('lib/state/dynamodb-wire.ts').some(isSdkClientPackage), false);
  });

  for (const fn of functions.filter((f) => f !== ECS_FUNCTION)) {
    it(`${fn} reaches no value import of an AWS SDK package`, () => {
      assert.deepEqual(sdkImporters(fn), []);
    });
  }

  it(`${ECS_FUNCTION} reaches neither the DynamoDB nor the SQS client`, () => {
    assert.deepEqual(
      sdkImporters(ECS_FUNCTION, (specifier) => WIRE_SERVICES.includes(specifier)),
      [],
    );
  });
});
