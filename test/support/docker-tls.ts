import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../lib/local/free-ports.ts';
import type { TestEnv } from './env.ts';

const execFileAsync = promisify(execFile);

/**
 * A remote Docker engine over TLS that requires a client certificate signed
 * by its CA. Under Docker Engine, the run's dockerd itself (`--tlsverify`,
 * started so by test/run-integration.ts); under Podman, whose 4.3 service
 * has no TLS option, stunnel (Debian's stunnel4) terminating TLS on a
 * loopback port and forwarding to the run's engine socket, with `verify = 2`.
 */
export interface TlsEngine {
  /** `tcp://127.0.0.1:<port>` */
  host: string;
  /** Who serves the TLS: `dockerd` itself, or `stunnel` in front of Podman. */
  servedBy: 'dockerd' | 'stunnel';
  /** Holds ca.pem, cert.pem and key.pem (the client's), as DOCKER_CERT_PATH does. */
  certPath: string;
  /** A CA and client certificate the engine does not trust. */
  strangerCertPath: string;
  stop(): Promise<void>;
}

/** The engine's CA and server certificate (for 127.0.0.1), and a client certificate it trusts. */
export interface EngineCertificates {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** ca.pem, cert.pem and key.pem of the client. */
  clientCertPath: string;
}

export async function engineCertificates(dir: string): Promise<EngineCertificates> {
  const clientCertPath = join(dir, 'client');
  mkdirSync(clientCertPath, { recursive: true });
  await certificates(dir, clientCertPath, 'svk-test-ca');
  return {
    caFile: join(dir, 'ca.pem'),
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server.key'),
    clientCertPath,
  };
}

export async function startTlsEngine(dir: string, env: TestEnv): Promise<TlsEngine> {
  rmSync(dir, { recursive: true, force: true });
  const strangerCertPath = join(dir, 'stranger');
  mkdirSync(strangerCertPath, { recursive: true });
  await certificates(join(dir, 'stranger-ca'), strangerCertPath, 'stranger-ca');
  const removeDir = async () => rmSync(dir, { recursive: true, force: true });
  if (env.docker.tls) {
    return {
      host: env.docker.tls.host,
      servedBy: 'dockerd',
      certPath: env.docker.tls.certPath,
      strangerCertPath,
      stop: removeDir,
    };
  }
  const certs = await engineCertificates(dir);
  const port = await freePort('127.0.0.1');
  const conf = join(dir, 'stunnel.conf');
  writeFileSync(
    conf,
    [
      'foreground = yes',
      'pid =',
      '[engine]',
      `accept = 127.0.0.1:${port}`,
      `connect = ${env.docker.host.replace(/^unix:\/\//, '')}`,
      `cert = ${certs.certFile}`,
      `key = ${certs.keyFile}`,
      `CAfile = ${certs.caFile}`,
      'verify = 2',
      '',
    ].join('\n'),
  );
  const child = spawn('stunnel', [conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  await waitListening(port, child, () => stderr);
  return {
    host: `tcp://127.0.0.1:${port}`,
    servedBy: 'stunnel',
    certPath: certs.clientCertPath,
    strangerCertPath,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await removeDir();
    },
  };
}

/** A CA in `caDir`, a server certificate for 127.0.0.1 beside it, and a client certificate in `clientDir`. */
async function certificates(caDir: string, clientDir: string, caName: string): Promise<void> {
  mkdirSync(caDir, { recursive: true });
  const openssl = (...args: string[]) => execFileAsync('openssl', args, { cwd: caDir });
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '1',
    '-subj',
    `/CN=${caName}`,
  );
  writeFileSync(join(caDir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  writeFileSync(join(caDir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, ext, out] of [
    ['server', 'server.ext', caDir],
    ['client', 'client.ext', clientDir],
  ] as const) {
    const key = name === 'server' ? join(caDir, 'server.key') : join(clientDir, 'key.pem');
    const cert = name === 'server' ? join(caDir, 'server.pem') : join(clientDir, 'cert.pem');
    await openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${name === 'server' ? '127.0.0.1' : 'svk-client'}`,
    );
    await openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      cert,
      '-days',
      '1',
      '-extfile',
      ext,
    );
    if (out === clientDir) writeFileSync(join(clientDir, 'ca.pem'), readFileSync(join(caDir, 'ca.pem')));
  }
}

async function waitListening(port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`stunnel exited with ${child.exitCode}: ${stderr()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1');
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`stunnel not listening on ${port}: ${stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
