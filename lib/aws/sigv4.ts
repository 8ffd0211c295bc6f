import { createHash, createHmac } from 'node:crypto';
import type { AwsCredentials } from './credentials.ts';

/**
 * AWS Signature Version 4 for the requests of our own wire
 * (lib/aws/aws-json-wire.ts): headers only, no query string, the payload
 * hashed whole. It computes what @smithy/signature-v4's `sign` computes
 * with its defaults (the canonical request, the string to sign, the
 * day's signing key; `x-amz-date`, `x-amz-security-token` and
 * `x-amz-content-sha256` added and signed), which
 * test/unit/aws-sigv4.test.ts checks, with node:crypto alone: the smithy
 * signer and its share of @smithy/core cost a cold start several
 * milliseconds of CPU to import.
 */

export interface SignableRequest {
  method: string;
  /** `host[:port]`, as the Host header carries it. */
  host: string;
  /** The URL's path, percent-encoded as URL.pathname gives it. */
  path: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';

export class SigV4Signer {
  readonly #service: string;
  readonly #region: string;
  /** The last signing key, for its day and secret: one HMAC chain per day instead of one per request. */
  #key: { id: string; key: Buffer } | undefined;

  constructor(options: { service: string; region: string }) {
    this.#service = options.service;
    this.#region = options.region;
  }

  /** The request's headers with `host`, the date, the token and `authorization` added. */
  sign(request: SignableRequest, credentials: AwsCredentials, at: Date = new Date()): Record<string, string> {
    const longDate = at
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d{3}/, '');
    const shortDate = longDate.slice(0, 8);
    const scope = `${shortDate}/${this.#region}/${this.#service}/aws4_request`;
    const payloadHash = sha256Hex(request.body);
    const headers: Record<string, string> = {
      ...request.headers,
      host: request.host,
      'x-amz-date': longDate,
      ...(credentials.sessionToken ? { 'x-amz-security-token': credentials.sessionToken } : {}),
      'x-amz-content-sha256': payloadHash,
    };
    const names = Object.keys(headers).sort();
    const canonicalRequest = [
      request.method,
      canonicalPath(request.path),
      '',
      ...names.map((name) => `${name}:${canonicalValue(headers[name] ?? '')}`),
      '',
      names.join(';'),
      payloadHash,
    ].join('\n');
    const stringToSign = [ALGORITHM, longDate, scope, sha256Hex(canonicalRequest)].join('\n');
    const signature = createHmac('sha256', this.#signingKey(credentials, shortDate))
      .update(stringToSign)
      .digest('hex');
    headers.authorization =
      `${ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, ` +
      `SignedHeaders=${names.join(';')}, Signature=${signature}`;
    return headers;
  }

  #signingKey(credentials: AwsCredentials, shortDate: string): Buffer {
    const id = `${shortDate}\n${credentials.accessKeyId}\n${credentials.secretAccessKey}`;
    if (this.#key?.id === id) return this.#key.key;
    let key = hmac(`AWS4${credentials.secretAccessKey}`, shortDate);
    for (const part of [this.#region, this.#service, 'aws4_request']) key = hmac(key, part);
    this.#key = { id, key };
    return key;
  }
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

/** Folded lines and runs of blanks become one space; the ends are trimmed of one space (smithy's rule). */
function canonicalValue(value: string): string {
  return value
    .replace(/[\r\n]/g, ' ')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}

/**
 * The path normalized (no empty, `.` or `..` segments) and URI-encoded once
 * more, as every service but S3 wants it (an encoded `%20` is signed as `%2520`).
 */
function canonicalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const trailing = segments.length > 0 && path.endsWith('/') ? '/' : '';
  const normalized = `${path.startsWith('/') ? '/' : ''}${segments.join('/')}${trailing}`;
  return escapeUri(normalized).replace(/%2F/g, '/');
}

/** encodeURIComponent, and the characters it leaves that RFC 3986 reserves. */
function escapeUri(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
