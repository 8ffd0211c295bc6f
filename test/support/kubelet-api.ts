import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { binDir } from '../../lib/local/control-plane/binaries.ts';
import { CertificateAuthority, type CertificateRequest } from '../../lib/local/control-plane/pki.ts';
import type { StreamingLambdaHandler } from '../../lib/local/kubelet-api-front.ts';
import { createLambdaContext } from '../../lib/local/lambda-context.ts';
import { type TestEnv, testEnv } from './env.ts';

/** The kubectl built from the same source as the control plane (scripts/ensure-kube.sh). */
export const KUBECTL = join(binDir(), 'kubectl');

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real kubectl as cluster admin; never rejects (the exit code is in
 * the result). `timeoutMs` bounds a command that would otherwise hang.
 */
export function kubectl(
  args: readonly string[],
  timeoutMs = 60_000,
  env: TestEnv = testEnv(),
): Promise<KubectlResult> {
  return new Promise((resolve) => {
    execFile(
      KUBECTL,
      ['--kubeconfig', env.kube.adminKubeconfig, ...args],
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** A kubectl still running: what it printed so far, and how it ends. */
export interface RunningKubectl {
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Resolves when kubectl exits on its own, or is killed at `timeoutMs` (code -1). */
  ended: Promise<KubectlResult>;
}

/**
 * Starts the real kubectl as cluster admin and lets the caller watch its
 * output as it arrives (`kubectl logs -f`). It is killed at `timeoutMs`, so a
 * stream that never ends fails the test instead of hanging it.
 */
export function kubectlStreaming(
  args: readonly string[],
  timeoutMs = 60_000,
  env: TestEnv = testEnv(),
): RunningKubectl {
  const child = spawn(KUBECTL, ['--kubeconfig', env.kube.adminKubeconfig, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString('utf8');
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  const ended = new Promise<KubectlResult>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: killed ? -1 : (code ?? -1), stdout, stderr });
    });
  });
  return { stdout: () => stdout, ended };
}

export interface FrontAnswer {
  status: number;
  body: string;
}

/**
 * One GET straight to the kubelet API's loopback front (no API server in
 * between), with a client certificate or none, and any headers (a bearer
 * token). A refused TLS handshake rejects.
 */
export function frontGet(
  address: string,
  port: number,
  path: string,
  options: { ca: string; cert?: string; key?: string; host?: string; headers?: Record<string, string> },
): Promise<FrontAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: address,
        port,
        path,
        method: 'GET',
        ca: options.ca,
        ...(options.cert ? { cert: options.cert, key: options.key } : {}),
        headers: { ...options.headers, ...(options.host ? { host: options.host } : {}) },
        timeout: 30_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Collects what a streaming handler writes: the prelude's metadata and the body. */
class CollectingStream extends Writable {
  chunks: Buffer[] = [];
  setContentType(): void {}
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.chunks.push(chunk);
    callback();
  }
}

/**
 * The `requestContext.apiId` and `stage` of the front startLocalKubeletApi
 * started for `env` (it sets them there): the only ones the handler serves.
 */
export function frontSource(env: Record<string, string | undefined>): { apiId: string; stage: string } {
  const apiId = env.SVK_KUBELET_API_ID;
  const stage = env.SVK_KUBELET_API_STAGE;
  if (!apiId || !stage) throw new Error('no kubelet API front was started with this environment');
  return { apiId, stage };
}

/**
 * Invokes a streaming handler once with `event` (no front in between) and
 * reads its answer as API Gateway would: the JSON prelude up to eight NUL
 * bytes, then the body.
 */
export async function invokeStreaming(handler: StreamingLambdaHandler, event: unknown): Promise<FrontAnswer> {
  const stream = new CollectingStream();
  const context = createLambdaContext({ functionName: 'kubelet-api', timeoutMs: 60_000 });
  await handler(event as never, stream as never, context);
  const all = Buffer.concat(stream.chunks);
  const end = all.indexOf(Buffer.alloc(8));
  const metadata: unknown = JSON.parse(all.subarray(0, end).toString('utf8'));
  const status =
    typeof metadata === 'object' &&
    metadata !== null &&
    'statusCode' in metadata &&
    typeof metadata.statusCode === 'number'
      ? metadata.statusCode
      : 0;
  return { status, body: all.subarray(end + 8).toString('utf8') };
}

/** A certificate and key as PEM text. */
export interface PemPair {
  cert: string;
  key: string;
}

/** A new CA in `dir/<name>/` (which is created). */
export async function newCertificateAuthority(dir: string, name: string): Promise<CertificateAuthority> {
  mkdirSync(join(dir, name), { recursive: true });
  return CertificateAuthority.create(join(dir, name));
}

/** Issues a certificate with `ca` into `dir` and returns it as PEM text. */
export async function issuePem(
  ca: CertificateAuthority,
  dir: string,
  name: string,
  request: CertificateRequest,
): Promise<PemPair> {
  const files = await ca.issue(name, request, dir);
  return { cert: readFileSync(files.cert, 'utf8'), key: readFileSync(files.key, 'utf8') };
}
