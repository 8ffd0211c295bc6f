import { createServer, type Server } from 'node:net';

/**
 * `count` distinct ports that are free now, on `host` (every interface when
 * omitted). All listeners are held open together, so no port is handed out
 * twice; another process may still take one before the caller binds it.
 */
export async function freePorts(count: number, host?: string): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: count }, () => listen(host)));
  const ports = servers.map((server) => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected listener address');
    return address.port;
  });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** One port that is free now on `host` (every interface when omitted). */
export async function freePort(host?: string): Promise<number> {
  const [port] = await freePorts(1, host);
  if (port === undefined) throw new Error('could not determine a free port');
  return port;
}

function listen(host: string | undefined): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => resolve(server));
  });
}
