import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import type { DockerEndpoint } from './settings.ts';

/** A client certificate, its key and the CA that signed the engine's certificate, in PEM. */
export interface TlsMaterial {
  ca: string;
  cert: string;
  key: string;
}

/** The TLS material could not be read or is not what it must be; the message never quotes it. */
export class EngineTlsError extends Error {
  override readonly name = 'EngineTlsError';
}

/** Reads a Secrets Manager secret's string: injected, so that only the factory imports the SDK. */
export type SecretReader = (secretId: string) => Promise<string>;

/**
 * The engine client. A unix socket needs nothing more; a tcp:// engine is
 * reached over TLS with a client certificate (the engine's `--tlsverify`),
 * its certificate checked against the given CA. The material comes from a
 * Secrets Manager secret in AWS (a JSON object `{ "ca", "cert", "key" }`,
 * PEM strings) or, for local runs, a directory holding `ca.pem`, `cert.pem`
 * and `key.pem` as the docker CLI's DOCKER_CERT_PATH does. It stays in this
 * process's memory and is never logged.
 */
export async function createEngineClient(
  endpoint: DockerEndpoint,
  readSecret: SecretReader,
): Promise<Docker> {
  if (endpoint.kind === 'unix') return new Docker({ socketPath: endpoint.socketPath });
  const tls =
    'secret' in endpoint.tls
      ? parseTlsSecret(endpoint.tls.secret, await readSecret(endpoint.tls.secret))
      : await readTlsDirectory(endpoint.tls.certPath);
  return new Docker({ protocol: 'https', host: endpoint.host, port: endpoint.port, ...tls });
}

/** The material in a secret's JSON string, or an error naming what is wrong (never the values). */
export function parseTlsSecret(secretId: string, text: string): TlsMaterial {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EngineTlsError(`secret ${secretId} is not a JSON object with ca, cert and key`);
  }
  if (typeof value !== 'object' || value === null) {
    throw new EngineTlsError(`secret ${secretId} is not a JSON object with ca, cert and key`);
  }
  const fields = value as Record<string, unknown>;
  const bad = (['ca', 'cert', 'key'] as const).filter((k) => {
    const v = fields[k];
    return typeof v !== 'string' || !v.includes('-----BEGIN ');
  });
  if (bad.length > 0) {
    throw new EngineTlsError(`secret ${secretId}: ${bad.join(', ')} must be PEM strings`);
  }
  return { ca: String(fields.ca), cert: String(fields.cert), key: String(fields.key) };
}

async function readTlsDirectory(dir: string): Promise<TlsMaterial> {
  const read = async (file: string) => {
    try {
      return await readFile(join(dir, file), 'utf8');
    } catch (err) {
      throw new EngineTlsError(`cannot read ${join(dir, file)}`, { cause: err });
    }
  };
  const [ca, cert, key] = await Promise.all([read('ca.pem'), read('cert.pem'), read('key.pem')]);
  return { ca, cert, key };
}
