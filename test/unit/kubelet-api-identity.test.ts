import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { forbiddenMessage, nodeAccess } from '../../lib/kubelet-api/access.ts';
import {
  isCertificateRejected,
  parseCertificateBundle,
  verifyClientCertificate,
} from '../../lib/kubelet-api/x509-identity.ts';
import type { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';
import { issuePem, newCertificateAuthority } from '../support/kubelet-api.ts';

const dir = mkdtempSync(join(tmpdir(), 'svk-x509-'));
let clusterCa: CertificateAuthority;
let otherCa: CertificateAuthority;

function rejection(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isCertificateRejected(err), String(err));
    return err.message;
  }
  assert.fail('accepted');
}

before(async () => {
  clusterCa = await newCertificateAuthority(dir, 'cluster-ca');
  otherCa = await newCertificateAuthority(dir, 'other-ca');
});

after(() => rmSync(dir, { recursive: true, force: true }));

describe('client certificates', () => {
  const cas = () => parseCertificateBundle(readFileSync(clusterCa.cert, 'utf8'));

  it('the user is the CommonName, the groups the Organization values', async () => {
    const cert = await issuePem(clusterCa, dir, 'apiserver', {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters', 'team a'],
      usage: 'client',
    });
    assert.deepEqual(verifyClientCertificate(cert.cert, cas(), Date.now()), {
      user: 'kube-apiserver-kubelet-client',
      groups: ['system:masters', 'team a'],
    });
  });

  it('reads the subject from the DER: a CommonName holding a line break and O= stays one name', async () => {
    const cert = await issuePem(clusterCa, dir, 'evil', {
      commonName: 'evil\nO=system:masters',
      usage: 'client',
    });
    assert.deepEqual(verifyClientCertificate(cert.cert, cas(), Date.now()), {
      user: 'evil\nO=system:masters',
      groups: [],
    });
  });

  it('refuses a certificate of another CA, an expired one, a serving one, and garbage', async () => {
    const foreign = await issuePem(otherCa, dir, 'f', { commonName: 'x', usage: 'client' });
    assert.match(
      rejection(() => verifyClientCertificate(foreign.cert, cas(), Date.now())),
      /not signed by the client CA/,
    );
    const shortLived = await issuePem(clusterCa, dir, 's', {
      commonName: 'x',
      usage: 'client',
      days: 1,
    });
    assert.match(
      rejection(() => verifyClientCertificate(shortLived.cert, cas(), Date.now() + 3 * 86_400_000)),
      /not valid now/,
    );
    const serving = await issuePem(clusterCa, dir, 'srv', {
      commonName: 'x',
      usage: 'server',
      altNames: ['DNS:x'],
    });
    assert.match(
      rejection(() => verifyClientCertificate(serving.cert, cas(), Date.now())),
      /not for client authentication/,
    );
    assert.match(
      rejection(() => verifyClientCertificate('not a certificate', cas(), Date.now())),
      /not a PEM/,
    );
  });

  it('refuses a certificate that is valid when the CA that signed it is not (expired), as Go verifies a chain', async () => {
    // The CA is good for ten years; this certificate for twenty.
    const outliving = await issuePem(clusterCa, dir, 'outliving', {
      commonName: 'outliving',
      usage: 'client',
      days: 7300,
    });
    assert.equal(verifyClientCertificate(outliving.cert, cas(), Date.now()).user, 'outliving');
    const [ca] = cas();
    const afterCa = Date.parse(ca?.validTo ?? '') + 86_400_000;
    assert.match(
      rejection(() => verifyClientCertificate(outliving.cert, cas(), afterCa)),
      /the client CA that signed the client certificate is not valid now \(valid from .* to .*\)/,
    );
  });

  it('accepts a certificate of any CA of a bundle', async () => {
    const bundle = parseCertificateBundle(
      readFileSync(otherCa.cert, 'utf8') + readFileSync(clusterCa.cert, 'utf8'),
    );
    assert.equal(bundle.length, 2);
    const cert = await issuePem(clusterCa, dir, 'b', {
      commonName: 'bundled',
      usage: 'client',
    });
    assert.equal(verifyClientCertificate(cert.cert, bundle, Date.now()).user, 'bundled');
  });
});

describe('authorization attributes (the kubelet mapping)', () => {
  it('maps paths to the nodes subresources and methods to verbs', () => {
    const cases: Array<[string, string, string, string]> = [
      ['GET', '/stats/summary', 'get', 'stats'],
      ['GET', '/stats', 'get', 'stats'],
      ['GET', '/metrics/resource', 'get', 'metrics'],
      ['GET', '/metrics', 'get', 'metrics'],
      ['GET', '/logs/syslog', 'get', 'log'],
      ['GET', '/spec/', 'get', 'spec'],
      ['GET', '/containerLogs/ns/p/c', 'get', 'proxy'],
      ['GET', '/pods', 'get', 'proxy'],
      ['GET', '/healthz', 'get', 'proxy'],
      ['GET', '/statsfoo', 'get', 'proxy'],
      ['POST', '/exec/ns/p/c', 'create', 'proxy'],
      ['DELETE', '/pods', 'delete', 'proxy'],
      ['HEAD', '/healthz', '', 'proxy'],
    ];
    for (const [method, path, verb, subresource] of cases) {
      assert.deepEqual(
        nodeAccess(method, path, 'vk-1'),
        { verb, subresource, node: 'vk-1' },
        `${method} ${path}`,
      );
    }
  });

  it('words a refusal as the kubelet does', () => {
    assert.equal(
      forbiddenMessage({ user: 'bob', groups: [] }, nodeAccess('GET', '/pods', 'vk-1')),
      'Forbidden (user=bob, verb=get, resource=nodes, subresource=proxy)',
    );
  });
});
