/**
 * The functions' AWS calls go through the AWS SDK's clients, configured in
 * one place (lib/aws/client-options.ts), and no module of ours signs a
 * request or speaks an AWS protocol itself.
 *
 * - Each function's static import graph (followed with TypeScript's parser,
 *   test/support/source-graph.ts) reaches the DynamoDB document client
 *   through lib/state/dynamodb-clients.ts, and the tick function the SQS
 *   client through lib/tick/sqs-tick-queue.ts; those modules build their
 *   clients with awsClientOptions.
 * - No source file of lib/, functions/ or scripts/ holds, in its string,
 *   template or regular-expression literals (comments do not count), what
 *   only a module that speaks an AWS protocol or signs a request needs: an
 *   `X-Amz-Target` header, an AWS JSON content type, a SigV4 algorithm,
 *   scope or signing header. The one AWS signature we make, the EKS
 *   authentication token (a presigned STS URL), is made by the SDK's own
 *   signer, @smithy/signature-v4, which nothing else imports.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filesUnder, literalTexts, packageImports, reachableWithin } from '../support/source-graph.ts';

/** Deeper than any chain of imports in the repository. */
const ALL_HOPS = 1_000;

/** Literals only a module speaking an AWS protocol, or signing for one, needs (compared in lower case). */
const PROTOCOL_MARKERS = [
  'x-amz-target',
  'application/x-amz-json',
  'aws4-hmac-sha256',
  'aws4_request',
  'x-amz-date',
  'x-amz-content-sha256',
  'x-amz-security-token',
  'x-amzn-query-mode',
];

/** The one module that signs (the EKS token), with the SDK's signer. */
const SIGNER_PACKAGE = '@smithy/signature-v4';
const EKS_TOKEN = 'lib/kube/eks-token.ts';

/** Each file `fn` reaches statically that imports `pkg` for its values. */
function importersOf(fn: string, pkg: string): string[] {
  return [...reachableWithin(fn, ALL_HOPS).keys()].filter((file) => packageImports(file).includes(pkg));
}

/** The protocol markers among `path`'s literals. */
function protocolMarkers(path: string): string[] {
  const found = new Set<string>();
  for (const text of literalTexts(path)) {
    const lower = text.toLowerCase();
    for (const marker of PROTOCOL_MARKERS) if (lower.includes(marker)) found.add(marker);
  }
  return [...found];
}

const ours = ['lib', 'functions', 'scripts'].flatMap((dir) => filesUnder(dir, ['.ts']));

describe("the functions' AWS calls go through the SDK's clients", () => {
  const functions = filesUnder('functions', ['.ts']);

  it('the clients are built in their one place, with the shared options', () => {
    assert.ok(functions.length >= 8);
    for (const [file, pkg] of [
      ['lib/state/dynamodb-clients.ts', '@aws-sdk/client-dynamodb'],
      ['lib/state/dynamodb-clients.ts', '@aws-sdk/lib-dynamodb'],
      ['lib/tick/sqs-tick-queue.ts', '@aws-sdk/client-sqs'],
      ['lib/aws/client-options.ts', '@smithy/node-http-handler'],
    ] as const) {
      assert.ok(packageImports(file).includes(pkg), `${file} imports ${pkg}`);
    }
    assert.ok(importersOf('lib/state/dynamodb-clients.ts', '@smithy/node-http-handler').length > 0);
    assert.ok(importersOf('lib/tick/sqs-tick-queue.ts', '@smithy/node-http-handler').length > 0);
  });

  for (const fn of functions) {
    it(`${fn} sends its state table's calls through the DynamoDB document client`, () => {
      assert.deepEqual(importersOf(fn, '@aws-sdk/client-dynamodb'), ['lib/state/dynamodb-clients.ts']);
      assert.ok(importersOf(fn, '@aws-sdk/lib-dynamodb').includes('lib/state/dynamodb.ts'));
    });
  }

  it("functions/tick.ts sends the chain's messages through the SQS client", () => {
    assert.deepEqual(importersOf('functions/tick.ts', '@aws-sdk/client-sqs'), ['lib/tick/sqs-tick-queue.ts']);
  });
});

describe('no module of ours speaks an AWS protocol or signs a request', () => {
  it('sees the markers where a test double answers the protocol, and not in comments', () => {
    assert.ok(protocolMarkers('test/support/memory-sqs.ts').includes('x-amz-target'));
    // eks-token.ts names X-Amz-Date in a comment only.
    assert.deepEqual(protocolMarkers(EKS_TOKEN), []);
  });

  it(`no source file of lib/, functions/ or scripts/ (${ours.length}) holds an AWS protocol or signing literal`, () => {
    assert.ok(ours.length > 100);
    const offenders = ours.flatMap((file) => {
      const markers = protocolMarkers(file);
      return markers.length > 0 ? [`${file}: ${markers.join(', ')}`] : [];
    });
    assert.deepEqual(offenders, []);
  });

  it(`only ${EKS_TOKEN} imports the SDK's signer, ${SIGNER_PACKAGE}`, () => {
    const importers = ours.filter((file) => packageImports(file).includes(SIGNER_PACKAGE));
    assert.deepEqual(importers, [EKS_TOKEN]);
  });
});
