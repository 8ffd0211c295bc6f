/**
 * A test host of our own in a network namespace, attached to this host as a
 * container engine attaches a container (kind's node, say): a bridge on the
 * host with the host's address on it, a veth pair from the bridge into the
 * namespace, the namespace's address behind it and its default route via
 * the host. Made with iproute2 (`ip netns add`, veth), as root; removed by
 * {@link TestNetns.remove}. And a loopback port-forward into it, the shape
 * of the kubeconfig kind writes (`https://127.0.0.1:<port>`).
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface TestNetns {
  /** The namespace's name (`ip netns exec <name> …`). */
  name: string;
  /** The bridge on the host side. */
  bridge: string;
  /** The host's address on the bridge. */
  hostAddress: string;
  /** The namespace's address. */
  address: string;
  /** Runs a command in the namespace: prefix it with these words. */
  launcher: string[];
  remove(): Promise<void>;
}

async function ip(...args: string[]): Promise<string> {
  try {
    return (await execFileAsync('ip', args, { timeout: 15_000 })).stdout;
  } catch (err) {
    const stderr = typeof err === 'object' && err !== null && 'stderr' in err ? String(err.stderr) : '';
    throw new Error(`ip ${args.join(' ')} failed: ${stderr || String(err)}`, { cause: err });
  }
}

/** Whether any route of this host already covers 10.a.b.0/24 (ignoring the default route). */
async function subnetTaken(a: number, b: number): Promise<boolean> {
  const routes: unknown = JSON.parse(await ip('-j', 'route', 'show'));
  const base = (10 << 24) | (a << 16) | (b << 8);
  return (Array.isArray(routes) ? routes : []).some((route: unknown) => {
    const dst = typeof route === 'object' && route !== null && 'dst' in route ? String(route.dst) : '';
    const [net = '', bits = '32'] = dst.split('/');
    const parts = net.split('.').map(Number);
    if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p))) return false;
    const length = Number(bits);
    const mask = length === 0 ? 0 : (~0 << (32 - Math.min(length, 24))) >>> 0;
    const routed =
      ((parts[0] ?? 0) << 24) | ((parts[1] ?? 0) << 16) | ((parts[2] ?? 0) << 8) | (parts[3] ?? 0);
    return length > 0 && (routed & mask) >>> 0 === (base & mask) >>> 0;
  });
}

/** Creates the namespace, its bridge and veth pair, on a free 10.x.y.0/24. */
export async function createTestNetns(): Promise<TestNetns> {
  let a = 0;
  let b = 0;
  for (let tries = 0; ; tries++) {
    [a, b] = [randomInt(200, 250), randomInt(0, 256)];
    if (!(await subnetTaken(a, b))) break;
    if (tries > 20) throw new Error('no free 10.x.y.0/24 for a test network namespace');
  }
  const tag = randomBytes(3).toString('hex');
  const name = `svk-kapi-${tag}`;
  const bridge = `svkbr${tag}`;
  const [hostEnd, nsEnd] = [`svkvh${tag}`, `svkvn${tag}`];
  const hostAddress = `10.${a}.${b}.1`;
  const address = `10.${a}.${b}.2`;
  const netns: TestNetns = {
    name,
    bridge,
    hostAddress,
    address,
    launcher: ['ip', 'netns', 'exec', name],
    async remove() {
      await ip('netns', 'del', name).catch(() => undefined);
      await ip('link', 'del', bridge).catch(() => undefined);
    },
  };
  try {
    await ip('netns', 'add', name);
    await ip('link', 'add', bridge, 'type', 'bridge');
    await ip('addr', 'add', `${hostAddress}/24`, 'dev', bridge);
    await ip('link', 'set', bridge, 'up');
    await ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', nsEnd);
    await ip('link', 'set', hostEnd, 'master', bridge);
    await ip('link', 'set', hostEnd, 'up');
    await ip('link', 'set', nsEnd, 'netns', name);
    await ip('-n', name, 'link', 'set', nsEnd, 'name', 'eth0');
    await ip('-n', name, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    await ip('-n', name, 'link', 'set', 'eth0', 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    await ip('-n', name, 'route', 'add', 'default', 'via', hostAddress);
  } catch (err) {
    await netns.remove();
    throw err;
  }
  return netns;
}

export interface PortForward {
  /** The loopback port that forwards. */
  port: number;
  close(): Promise<void>;
}

/** Forwards 127.0.0.1:<port> to `host:port`, byte for byte, as docker-proxy forwards kind's API server port. */
export async function forwardLoopback(host: string, port: number): Promise<PortForward> {
  const open = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(port, host);
    for (const socket of [inbound, outbound]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const bound = server.address();
  if (bound === null || typeof bound === 'string') throw new Error('the forward has no port');
  return {
    port: bound.port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of open) socket.destroy();
      }),
  };
}
