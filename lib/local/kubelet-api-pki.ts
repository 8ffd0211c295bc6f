import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * Certificates for the kubelet API on loopback, signed by the local cluster
 * CA with the openssl CLI (node:crypto cannot sign X.509), as kubeadm signs
 * `apiserver-kubelet-client` and kubelets' serving certificates.
 */
export interface IssuedCertificate {
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
}

export interface IssueOptions {
  ca: { certPath: string; keyPath: string };
  /** Directory the files go to, as `<name>.crt` and `<name>.key`. */
  dir: string;
  name: string;
  commonName: string;
  /** Organization values: the groups of a client certificate. */
  organizations?: readonly string[];
  usage: 'client' | 'server';
  /** Subject alternative names of a serving certificate. */
  ips?: readonly string[];
  dnsNames?: readonly string[];
  days?: number;
}

/** Issues one certificate and key (EC P-256) signed by the CA. */
export async function issueCertificate(options: IssueOptions): Promise<IssuedCertificate> {
  const p = (ext: string) => join(options.dir, `${options.name}.${ext}`);
  const sans = [
    ...(options.ips ?? []).map((ip) => `IP:${ip}`),
    ...(options.dnsNames ?? []).map((d) => `DNS:${d}`),
  ];
  writeFileSync(
    p('cnf'),
    [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      '[dn]',
      '[ext]',
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature, keyEncipherment',
      `extendedKeyUsage = ${options.usage === 'client' ? 'clientAuth' : 'serverAuth'}`,
      'authorityKeyIdentifier = keyid',
      ...(sans.length > 0 ? [`subjectAltName = ${sans.join(', ')}`] : []),
      '',
    ].join('\n'),
  );
  const subject = `/CN=${options.commonName}${(options.organizations ?? []).map((o) => `/O=${o}`).join('')}`;
  await openssl([
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-config',
    p('cnf'),
    '-subj',
    subject,
    '-keyout',
    p('key'),
    '-out',
    p('csr'),
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    p('csr'),
    '-CA',
    options.ca.certPath,
    '-CAkey',
    options.ca.keyPath,
    '-set_serial',
    `0x${randomBytes(16).toString('hex')}`,
    '-days',
    String(options.days ?? 365),
    '-extfile',
    p('cnf'),
    '-extensions',
    'ext',
    '-out',
    p('crt'),
  ]);
  return {
    certPath: p('crt'),
    keyPath: p('key'),
    cert: readFileSync(p('crt'), 'utf8'),
    key: readFileSync(p('key'), 'utf8'),
  };
}

/** A self-signed CA (EC P-256) in `dir` as `<name>.crt` and `<name>.key`: for tests, a CA the cluster does not trust. */
export async function createCertificateAuthority(
  dir: string,
  name: string,
): Promise<{ certPath: string; keyPath: string }> {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  writeFileSync(
    join(dir, `${name}.cnf`),
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
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-config',
    join(dir, `${name}.cnf`),
    '-extensions',
    'ca',
    '-subj',
    `/CN=${name}`,
    '-days',
    '30',
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  return { certPath, keyPath };
}

async function openssl(args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args, { timeout: 30_000 });
  } catch (err) {
    const stderr = typeof err === 'object' && err !== null && 'stderr' in err ? String(err.stderr) : '';
    throw new Error(`openssl ${args[0]} failed: ${stderr || String(err)}`, { cause: err });
  }
}
