/**
 * Rotating kube-apiserver's serving certificate under a running control
 * plane (lib/local/control-plane.ts), for the fault scenarios and the fault
 * matrix: a new key and certificate from the same CA with the same names,
 * moved over the files `--tls-cert-file` and `--tls-private-key-file` name.
 * kube-apiserver reloads them on its own (its dynamic serving certificate
 * controller watches the files), without a restart.
 */
import { copyFileSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { connect } from 'node:tls';
import { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';

/** The serial number of the certificate `server` (https URL) serves on a new TLS connection. */
export function servedSerial(server: string, caFile: string): Promise<string> {
  const url = new URL(server);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), ca: readFileSync(caFile) }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(serial);
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error('no TLS handshake within 10 s')));
    socket.on('error', reject);
  });
}

/**
 * Issues a new serving certificate into `<controlPlaneDir>/certs`, replacing
 * the served one, and resolves once kube-apiserver serves it (its old and
 * new serial numbers, and how long the reload took).
 * @throws Error when it still serves the old one after `timeoutMs`.
 */
export async function rotateServingCertificate(options: {
  controlPlaneDir: string;
  server: string;
  caFile: string;
  timeoutMs?: number;
}): Promise<{ before: string; after: string; reloadMs: number }> {
  const { server, caFile } = options;
  const certs = join(options.controlPlaneDir, 'certs');
  const before = await servedSerial(server, caFile);
  const staged = join(certs, 'rotated');
  mkdirSync(staged, { recursive: true });
  const extFile = join(certs, 'serving.ext');
  const altNames = readFileSync(extFile, 'utf8').match(/subjectAltName\s*=\s*(.*)/)?.[1];
  if (!altNames) throw new Error(`no subjectAltName in ${extFile}`);
  const files = await CertificateAuthority.open(certs).issue(
    'serving',
    { commonName: 'svk-local-kube', usage: 'server', altNames: altNames.split(',').map((n) => n.trim()) },
    staged,
  );
  // Each file by rename, the key first: the server never reads a half-written file.
  for (const [from, name] of [
    [files.key, 'serving.key'],
    [files.cert, 'serving.crt'],
  ] as const) {
    copyFileSync(from, join(staged, `${name}.next`));
    renameSync(join(staged, `${name}.next`), join(certs, name));
  }
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 180_000;
  for (;;) {
    const now = await servedSerial(server, caFile).catch(() => before);
    if (now !== before) return { before, after: now, reloadMs: Date.now() - started };
    if (Date.now() - started > timeoutMs) {
      throw new Error(
        `kube-apiserver still serves certificate ${before} ${timeoutMs} ms after the files changed`,
      );
    }
    await delay(1_000);
  }
}
