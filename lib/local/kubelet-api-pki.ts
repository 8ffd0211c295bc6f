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

async function openssl(args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args, { timeout: 30_000 });
  } catch (err) {
    const stderr = typeof err === 'object' && err !== null && 'stderr' in err ? String(err.stderr) : '';
    throw new Error(`openssl ${args[0]} failed: ${stderr || String(err)}`, { cause: err });
  }
}
