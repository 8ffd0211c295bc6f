/**
 * The control plane's throwaway PKI: a CA that issues named certificates
 * (EC P-256 keys, via the openssl CLI because node:crypto cannot sign X.509),
 * and the RSA key pair that signs service-account tokens.
 *
 * Files, in the directory given: `ca.crt`/`ca.key`, `<name>.crt`/`<name>.key`
 * for each issued certificate, `sa.key`/`sa.pub`.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ControlPlaneStartError } from './start-error.ts';

const execFileAsync = promisify(execFile);

/** A certificate and its private key, as PEM files. */
export interface CertificateFiles {
  cert: string;
  key: string;
}

export interface CertificateRequest {
  /** Subject CN: the user name when Kubernetes authenticates a client certificate. */
  commonName: string;
  /** Subject O: the groups when Kubernetes authenticates a client certificate. */
  organizations?: readonly string[];
  /** `server` for a TLS server (serverAuth), `client` for a client certificate (clientAuth). */
  usage: 'server' | 'client';
  /** subjectAltName entries, e.g. `IP:127.0.0.1`, `DNS:localhost`; a server certificate needs at least one. */
  altNames?: readonly string[];
  /** Default 365. */
  days?: number;
}

/** The service-account token signing key pair (PKCS#1 private key, SPKI public key). */
export interface ServiceAccountKeys {
  privateKey: string;
  publicKey: string;
}

/** A certificate authority whose key lives in a directory; {@link issue} signs certificates with it. */
export class CertificateAuthority {
  readonly cert: string;
  readonly key: string;

  private constructor(private readonly dir: string) {
    this.cert = join(dir, 'ca.crt');
    this.key = join(dir, 'ca.key');
  }

  /** A new self-signed CA (`CN=svk-local-ca`, ten years) in `dir`, which must exist. */
  static async create(dir: string): Promise<CertificateAuthority> {
    const ca = new CertificateAuthority(dir);
    const config = join(dir, 'openssl.cnf');
    writeFileSync(
      config,
      [
        '[req]',
        'distinguished_name = dn',
        'prompt = no',
        '[dn]',
        '[ca]',
        'basicConstraints = critical, CA:TRUE',
        'keyUsage = critical, keyCertSign, cRLSign, digitalSignature',
        'subjectKeyIdentifier = hash',
        '',
      ].join('\n'),
    );
    await openssl([
      'req',
      '-x509',
      ...NEW_EC_KEY,
      '-config',
      config,
      '-extensions',
      'ca',
      '-subj',
      '/CN=svk-local-ca',
      '-days',
      '3650',
      '-set_serial',
      serial(),
      '-keyout',
      ca.key,
      '-out',
      ca.cert,
    ]);
    return ca;
  }

  /**
   * The CA {@link create} made in `dir` earlier: to issue further certificates
   * (the local kubelet API's serving certificate, test clients).
   */
  static open(dir: string): CertificateAuthority {
    return new CertificateAuthority(dir);
  }

  /** Issues `<name>.crt` and `<name>.key` (in `into`, by default the CA's directory), signed by this CA. */
  async issue(name: string, request: CertificateRequest, into: string = this.dir): Promise<CertificateFiles> {
    if (request.usage === 'server' && !request.altNames?.length) {
      throw new TypeError(`certificate ${name}: a server certificate needs altNames`);
    }
    const subj = subject(request);
    const files = { cert: join(into, `${name}.crt`), key: join(into, `${name}.key`) };
    const csr = join(into, `${name}.csr`);
    const extensions = join(into, `${name}.ext`);
    writeFileSync(extensions, extensionLines(request).join('\n'));
    await openssl([
      'req',
      '-new',
      ...NEW_EC_KEY,
      '-config',
      join(this.dir, 'openssl.cnf'),
      '-subj',
      subj,
      '-keyout',
      files.key,
      '-out',
      csr,
    ]);
    await openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      this.cert,
      '-CAkey',
      this.key,
      '-set_serial',
      serial(),
      '-days',
      String(request.days ?? 365),
      '-extfile',
      extensions,
      '-out',
      files.cert,
    ]);
    return files;
  }
}

/**
 * A new EC P-256 key and a PKCS#10 certificate signing request for it (the
 * subject and subjectAltName of `request`), as `<name>.key` and `<name>.csr`
 * in `dir`: for a signer other than a CA of ours (a cluster's CSR API).
 */
export async function newCertificateRequest(
  name: string,
  request: Pick<CertificateRequest, 'commonName' | 'organizations' | 'altNames'>,
  dir: string,
): Promise<{ key: string; csr: string }> {
  const files = { key: join(dir, `${name}.key`), csr: join(dir, `${name}.csr`) };
  const san = request.altNames?.length ? ['-addext', `subjectAltName=${request.altNames.join(',')}`] : [];
  await openssl([
    'req',
    '-new',
    ...NEW_EC_KEY,
    '-subj',
    subject(request),
    ...san,
    '-keyout',
    files.key,
    '-out',
    files.csr,
  ]);
  return files;
}

/** Writes `sa.key` and `sa.pub` in `dir`: the key pair that signs and verifies service-account tokens. */
export function writeServiceAccountKeys(dir: string): ServiceAccountKeys {
  const keys = { privateKey: join(dir, 'sa.key'), publicKey: join(dir, 'sa.pub') };
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  writeFileSync(keys.privateKey, pair.privateKey, { mode: 0o600 });
  writeFileSync(keys.publicKey, pair.publicKey);
  return keys;
}

const NEW_EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** The X.509 v3 extensions of an issued certificate, as an openssl extension file's default section. */
function extensionLines(request: CertificateRequest): string[] {
  return [
    'basicConstraints = critical, CA:FALSE',
    'keyUsage = critical, digitalSignature, keyEncipherment',
    `extendedKeyUsage = ${request.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
    'authorityKeyIdentifier = keyid',
    ...(request.altNames?.length ? [`subjectAltName = ${request.altNames.join(', ')}`] : []),
    '',
  ];
}

function subject(request: Pick<CertificateRequest, 'commonName' | 'organizations'>): string {
  const parts = [`CN=${request.commonName}`, ...(request.organizations ?? []).map((o) => `O=${o}`)];
  for (const part of parts) {
    if (part.includes('/')) throw new TypeError(`certificate subject ${part}: "/" is not allowed`);
  }
  return `/${parts.join('/')}`;
}

function serial(): string {
  return `0x${randomBytes(16).toString('hex')}`;
}

async function openssl(args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args, { timeout: 30_000 });
  } catch (err) {
    const stderr = typeof err === 'object' && err !== null && 'stderr' in err ? String(err.stderr) : '';
    throw new ControlPlaneStartError(`openssl ${args[0]} failed: ${stderr || String(err)}`, { cause: err });
  }
}
