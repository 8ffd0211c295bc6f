import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * A remote Docker engine stand-in: stunnel (Debian's stunnel4) terminating
 * TLS on a loopback port and forwarding to the run's engine socket,
 * requiring a client certificate signed by its CA, as `dockerd --tlsverify`
 * does. Podman 4.3's service has no TLS option of its own.
 */
export interface TlsEngine {
  /** `tcp://127.0.0.1:<port>` */
  host: string;
  port: number;
  /** Holds ca.pem, cert.pem and key.pem (the client's), as DOCKER_CERT_PATH does. */
  certPath: string;
  /** A CA and client certificate the engine does not trust. */
  strangerCertPath: string;
  stop(): Promise<void>;
}

export async function startTlsEngine(dir: string, socketPath: string): Promise<TlsEngine> {
  rmSync(dir, { recursive: true, force: true });
  const certPath = join(dir, 'client');
  const strangerCertPath = join(dir, 'stranger');
  mkdirSync(certPath, { recursive: true });
  mkdirSync(strangerCertPath, { recursive: true });
  await certificates(dir, certPath, 'svk-test-ca');
  await certificates(join(dir, 'stranger-ca'), strangerCertPath, 'stranger-ca');
  const port = await freePort();
  const conf = join(dir, 'stunnel.conf');
  writeFileSync(
    conf,
    [
      'foreground = yes',
      'pid =',
      '[engine]',
      `accept = 127.0.0.1:${port}`,
      `connect = ${socketPath}`,
      `cert = ${join(dir, 'server.pem')}`,
      `key = ${join(dir, 'server.key')}`,
      `CAfile = ${join(certPath, 'ca.pem')}`,
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
    port,
    certPath,
    strangerCertPath,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
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
