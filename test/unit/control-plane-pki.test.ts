import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CertificateAuthority, writeServiceAccountKeys } from '../../lib/local/control-plane/pki.ts';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

const certificate = (path: string) => new X509Certificate(readFileSync(path));

describe('control-plane PKI (the openssl CLI)', () => {
  let dir = '';
  let ca: CertificateAuthority;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svk-pki-'));
    ca = await CertificateAuthority.create(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a self-signed CA that may sign certificates', () => {
    const cert = certificate(ca.cert);
    assert.equal(cert.ca, true);
    assert.match(cert.subject, /CN=svk-local-ca/);
    assert.ok(cert.verify(cert.publicKey), 'self-signed');
    assert.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(ca.key))));
  });

  it('issues a named server certificate for the given names, signed by the CA', async () => {
    const files = await ca.issue('web', {
      commonName: 'svk-web',
      usage: 'server',
      altNames: ['IP:127.0.0.1', 'DNS:localhost'],
    });
    assert.deepEqual(files, { cert: join(dir, 'web.crt'), key: join(dir, 'web.key') });
    const cert = certificate(files.cert);
    assert.equal(cert.ca, false);
    assert.ok(cert.checkIssued(certificate(ca.cert)));
    assert.ok(cert.verify(certificate(ca.cert).publicKey));
    assert.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(files.key))));
    assert.deepEqual(cert.keyUsage, [SERVER_AUTH]);
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.equal(cert.checkHost('example.com'), undefined);
  });

  it('issues a client certificate whose CN and O are the user and groups Kubernetes reads', async () => {
    const files = await ca.issue('client', {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usage: 'client',
    });
    const cert = certificate(files.cert);
    assert.ok(cert.checkIssued(certificate(ca.cert)));
    assert.deepEqual(cert.keyUsage, [CLIENT_AUTH]);
    assert.deepEqual(cert.subject.split('\n').sort(), [
      'CN=kube-apiserver-kubelet-client',
      'O=system:masters',
    ]);
    assert.equal(cert.subjectAltName, undefined);
  });

  it('refuses a server certificate without names, and a subject with a slash, before running openssl', async () => {
    await assert.rejects(ca.issue('nameless', { commonName: 'x', usage: 'server' }), /needs altNames/);
    await assert.rejects(
      ca.issue('slash', { commonName: 'a/b', usage: 'client' }),
      /certificate subject CN=a\/b: "\/" is not allowed/,
    );
    for (const file of ['nameless.ext', 'nameless.key', 'slash.ext', 'slash.key']) {
      assert.equal(existsSync(join(dir, file)), false, `${file} written`);
    }
  });

  it('writes the service-account key pair as PEM files', () => {
    const keys = writeServiceAccountKeys(dir);
    const key = createPrivateKey(readFileSync(keys.privateKey));
    assert.equal(key.asymmetricKeyType, 'rsa');
    assert.match(readFileSync(keys.publicKey, 'utf8'), /^-----BEGIN PUBLIC KEY-----/);
  });
});
