import { rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A unix-socket proxy in front of a real engine's API socket that passes
 * every request through, but holds back a container log's answer
 * (`GET /containers/{id}/logs`) after its first `holdAfterBytes` bytes,
 * until released: the engine has the whole log ready, and the client can
 * only have what came through. A client that buffers the whole answer
 * before using any of it waits; one that streams has its first lines.
 * Meant for log answers longer than `holdAfterBytes`: a shorter one is
 * passed whole and still counts as a log answer until its connection closes.
 */
export class StallingEngineProxy {
  readonly #server: Server;
  readonly #held = new Set<() => void>();
  readonly #sockets = new Set<Socket>();
  /**
   * Log answers whose client closed its connection before the answer was
   * released: it quit with at most `holdAfterBytes` of it read.
   */
  closedEarly = 0;

  private constructor(
    readonly socketPath: string,
    server: Server,
  ) {
    this.#server = server;
  }

  static async start(
    engineSocket: string,
    socketPath: string,
    holdAfterBytes: number,
  ): Promise<StallingEngineProxy> {
    rmSync(socketPath, { force: true });
    let proxy: StallingEngineProxy | undefined;
    const server = createServer((client) => proxy?.relay(client, engineSocket, holdAfterBytes));
    proxy = new StallingEngineProxy(socketPath, server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    return proxy;
  }

  private relay(client: Socket, engineSocket: string, holdAfterBytes: number): void {
    const engine = connect(engineSocket);
    for (const socket of [client, engine]) {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    }
    // HTTP/1.1 on one connection, one request at a time: after a log request, the answer is the log.
    let logAnswer = false;
    let passed = 0;
    client.on('data', (chunk: Buffer) => {
      if (/^GET \/[^ ]*containers\/[^ ]+\/logs\?/m.test(chunk.toString('latin1'))) {
        logAnswer = true;
        passed = 0;
      }
      engine.write(chunk);
    });
    engine.on('data', (chunk: Buffer) => {
      if (!logAnswer) {
        client.write(chunk);
        return;
      }
      const room = Math.max(0, holdAfterBytes - passed);
      if (room > 0) client.write(chunk.subarray(0, room));
      passed += Math.min(room, chunk.length);
      if (chunk.length > room) {
        // Hold the rest: stop reading the engine until released.
        engine.pause();
        const rest = chunk.subarray(room);
        const release = () => {
          logAnswer = false;
          client.write(rest);
          engine.resume();
        };
        this.#held.add(release);
      }
    });
    client.on('close', () => {
      if (logAnswer) this.closedEarly++;
      engine.destroy();
    });
    engine.on('close', () => client.destroy());
    client.on('error', () => engine.destroy());
    engine.on('error', () => client.destroy());
  }

  /** Lets every held answer through. */
  release(): void {
    for (const release of this.#held) release();
    this.#held.clear();
  }

  async stop(): Promise<void> {
    this.#held.clear();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
    rmSync(this.socketPath, { force: true });
  }
}
