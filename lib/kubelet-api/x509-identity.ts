import { X509Certificate } from 'node:crypto';

/**
 * Who a client certificate names, as Kubernetes' x509 authenticator reads it
 * (k8s.io/apiserver's `x509.CommonNameUserConversion`): the user is the
 * subject's CommonName, the groups its Organization values. The subject is
 * read from the certificate's DER, never from a rendered subject string: a
 * CommonName holding "\nO=system:masters" must stay one name, not become a
 * group.
 */
export interface CertificateIdentity {
  user: string;
  groups: string[];
}

/** Why a presented certificate does not authenticate anyone. */
export class CertificateRejectedError extends Error {
  override readonly name = 'CertificateRejectedError';
}

export function isCertificateRejected(err: unknown): err is CertificateRejectedError {
  return err instanceof CertificateRejectedError;
}

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_USAGE = '2.5.29.37.0';

/** The certificates of a PEM bundle (one or more `CERTIFICATE` blocks). */
export function parseCertificateBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new X509Certificate(block));
}

/**
 * Verifies `pem` (the client's leaf certificate) against the CA bundle, as
 * a kubelet verifies its clients against `--client-ca-file`: signed by one
 * of the CAs, that CA and the certificate both valid at `now`, usable for
 * client authentication; then reads its identity.
 * @throws CertificateRejectedError saying why it is not accepted.
 */
export function verifyClientCertificate(
  pem: string,
  cas: readonly X509Certificate[],
  now: number,
): CertificateIdentity {
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(pem);
  } catch (err) {
    throw new CertificateRejectedError('the client certificate is not a PEM X.509 certificate', {
      cause: err,
    });
  }
  const issuers = cas.filter((ca) => ca.ca && leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
  const [signer] = issuers;
  if (!signer) throw new CertificateRejectedError('the client certificate is not signed by the client CA');
  // As Go's x509 Verify, which the kubelet uses: every certificate of the chain must be valid now, the CA too.
  if (!issuers.some((ca) => validAt(ca, now))) {
    throw new CertificateRejectedError(
      `the client CA that signed the client certificate is not valid now (valid from ${signer.validFrom} to ${signer.validTo})`,
    );
  }
  if (!validAt(leaf, now)) {
    throw new CertificateRejectedError(
      `the client certificate is not valid now (valid from ${leaf.validFrom} to ${leaf.validTo})`,
    );
  }
  const usages = leaf.keyUsage;
  if (Array.isArray(usages) && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_USAGE)) {
    throw new CertificateRejectedError('the client certificate is not for client authentication');
  }
  const identity = subjectIdentity(new Uint8Array(leaf.raw));
  if (!identity.user)
    throw new CertificateRejectedError('the client certificate names no user (no CommonName)');
  return identity;
}

function validAt(cert: X509Certificate, now: number): boolean {
  return now >= Date.parse(cert.validFrom) && now <= Date.parse(cert.validTo);
}

interface Tlv {
  tag: number;
  start: number;
  end: number;
}

/** One DER element at `offset` of `der`: its tag and where its contents are. */
function tlv(der: Uint8Array, offset: number, limit = der.length): Tlv {
  const tag = der[offset];
  const first = der[offset + 1];
  if (tag === undefined || first === undefined) throw new CertificateRejectedError('truncated certificate');
  let length = first;
  let start = offset + 2;
  if (first & 0x80) {
    const bytes = first & 0x7f;
    if (bytes === 0 || bytes > 4) throw new CertificateRejectedError('unsupported DER length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + (der[start + i] ?? 0);
    start += bytes;
  }
  const end = start + length;
  if (end > limit) throw new CertificateRejectedError('truncated certificate');
  return { tag, start, end };
}

/** The elements inside a constructed element. */
function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end; ) {
    const child = tlv(der, at, parent.end);
    out.push(child);
    at = child.end;
  }
  return out;
}

const OID_COMMON_NAME = '55 04 03';
const OID_ORGANIZATION = '55 04 0a';

/**
 * CommonName (the last one, as Go's pkix.Name keeps it) and Organization
 * values of the subject of a certificate's DER.
 * @throws CertificateRejectedError when the DER is not a certificate it can read.
 */
export function subjectIdentity(der: Uint8Array): CertificateIdentity {
  const certificate = tlv(der, 0);
  const [tbs] = children(der, certificate);
  if (!tbs) throw new CertificateRejectedError('malformed certificate');
  const fields = children(der, tbs);
  // tbsCertificate: [0] version (optional), serial, signature, issuer, validity, subject, ...
  const subject = fields[fields[0]?.tag === 0xa0 ? 5 : 4];
  if (!subject) throw new CertificateRejectedError('malformed certificate: no subject');
  let user = '';
  const groups: string[] = [];
  for (const rdn of children(der, subject)) {
    for (const attribute of children(der, rdn)) {
      const [type, value] = children(der, attribute);
      if (!type || !value) continue;
      const oid = hex(der.subarray(type.start, type.end));
      if (oid === OID_COMMON_NAME) user = decodeString(der, value);
      else if (oid === OID_ORGANIZATION) groups.push(decodeString(der, value));
    }
  }
  return { user, groups };
}

function hex(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(' ');
}

const BMP_STRING = 0x1e;
const UNIVERSAL_STRING = 0x1c;

function decodeString(der: Uint8Array, value: Tlv): string {
  const bytes = der.subarray(value.start, value.end);
  if (value.tag === BMP_STRING) return new TextDecoder('utf-16be').decode(bytes);
  if (value.tag === UNIVERSAL_STRING) {
    // UCS-4: four bytes a character, each a Unicode scalar value (no surrogate, at most U+10FFFF).
    if (bytes.length % 4 !== 0)
      throw new CertificateRejectedError('malformed UniversalString in the subject');
    let out = '';
    for (let i = 0; i < bytes.length; i += 4) {
      const point =
        (bytes[i] ?? 0) * 0x1000000 +
        ((bytes[i + 1] ?? 0) << 16) +
        ((bytes[i + 2] ?? 0) << 8) +
        (bytes[i + 3] ?? 0);
      if (point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) {
        throw new CertificateRejectedError('malformed UniversalString in the subject');
      }
      out += String.fromCodePoint(point);
    }
    return out;
  }
  // UTF8String, PrintableString, IA5String and (close enough) T61String.
  return new TextDecoder().decode(bytes);
}
