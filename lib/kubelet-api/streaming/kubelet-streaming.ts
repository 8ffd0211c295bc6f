import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../../log/logger.ts';
import {
  isKubeletApiEventError,
  type KubeletApiRequest,
  parseKubeletApiEvent,
} from '../kubelet-api-request.ts';
import { type KubeletApiResponse, textResponse } from '../responses.ts';
import { admitKubeletApiRequest, type KubeletApiDependencies } from '../serve.ts';
import { AsyncQueue } from './async-queue.ts';
import type { CommandChannels } from './command-channels.ts';
import type { CommandOutcome } from './command-status.ts';
import {
  type PortForwardTarget,
  refusePortForwardStream,
  spdyPortForward,
  websocketPortForward,
} from './port-forward.ts';
import { SpdySession, type SpdyStream } from './spdy/spdy-session.ts';
import { SPDY_COMMAND_PROTOCOLS, spdyCommandChannels } from './spdy-command.ts';
import { type CommandRequest, readStreamRequest, type StreamRequest } from './stream-request.ts';
import {
  ChannelSocket,
  pickProtocol,
  WEBSOCKET_COMMAND_PROTOCOLS,
  WEBSOCKET_PORT_FORWARD_PROTOCOLS,
  websocketCommandChannels,
} from './websocket-channels.ts';

/**
 * The kubelet API's streaming endpoints, `/exec`, `/attach` and
 * `/portForward`, served where the connection can be upgraded: the local
 * front hands every upgrade request here (API Gateway cannot carry one).
 * A request is admitted exactly as a request/response one is
 * (authentication, `nodes/proxy` authorization), the pod and container are
 * checked, and only then is the connection upgraded, to SPDY/3.1 (kubectl)
 * or a WebSocket (other clients), whichever the client asked for; every
 * refusal before that is an HTTP answer the client shows.
 */

export interface KubeletStreamingOptions {
  /** A connection with no byte read or written for this long is closed (the kubelet's default: 4 h). */
  idleTimeoutMs?: number;
  /** How long a client has to open a command's streams, or both streams of a forwarded connection (30 s). */
  creationTimeoutMs?: number;
}

export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 4 * 60 * 60_000;
export const DEFAULT_STREAM_CREATION_TIMEOUT_MS = 30_000;

const SPDY_PORT_FORWARD_PROTOCOLS = ['portforward.k8s.io'];

/** The upgrade requests of one front: each served until it ends; {@link KubeletStreaming.live} counts them. */
export class KubeletStreaming {
  private readonly sessions = new Set<{ end(): void }>();
  private readonly idleTimeoutMs: number;
  private readonly creationTimeoutMs: number;

  constructor(
    private readonly deps: () => Promise<KubeletApiDependencies>,
    options: KubeletStreamingOptions = {},
  ) {
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS;
    this.creationTimeoutMs = options.creationTimeoutMs ?? DEFAULT_STREAM_CREATION_TIMEOUT_MS;
  }

  /** Upgraded connections open now. */
  live(): number {
    return this.sessions.size;
  }

  /** Ends every upgraded connection. */
  close(): void {
    for (const session of this.sessions) session.end();
  }

  /**
   * Serves one upgrade request. `event` is the REST API proxy event the
   * front builds for every request (with the verified client certificate).
   */
  async handleUpgrade(event: unknown, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => undefined);
    let request: KubeletApiRequest;
    try {
      request = parseKubeletApiEvent(event);
    } catch (err) {
      if (isKubeletApiEventError(err)) return refuse(socket, textResponse(400, err.message));
      throw err;
    }
    // An unexpected failure is answered with the request id its log line carries, not the error's text.
    const internal = () =>
      textResponse(
        500,
        `internal error (request id ${request.requestId ?? 'none'}): see the kubelet API's log`,
      );
    let deps: KubeletApiDependencies;
    try {
      deps = await this.deps();
    } catch (err) {
      process.emitWarning(
        `kubelet API (request id ${request.requestId ?? 'none'}): its dependencies could not be built: ${err instanceof Error ? err.message : String(err)}`,
      );
      return refuse(socket, internal());
    }
    try {
      await this.serve(request, req, socket, head, deps);
    } catch (err) {
      deps.log.error(
        { err, path: request.path, api_request_id: request.requestId },
        'kubelet API: a streaming request failed',
      );
      if (!socket.destroyed) refuse(socket, internal());
    }
  }

  private async serve(
    request: KubeletApiRequest,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    deps: KubeletApiDependencies,
  ): Promise<void> {
    const admission = await admitKubeletApiRequest(request, deps);
    if ('refused' in admission) return refuse(socket, admission.refused);
    const log = deps.log.child(admission.context);
    const read = await readStreamRequest(request, admission.node, deps, isWebSocket(req));
    if ('refused' in read) return refuse(socket, read.refused);
    const target: PortForwardTarget = {
      pod: read.pod,
      streams: read.streams,
      onError: (port, err) =>
        log.info({ port, err: String(err) }, 'kubelet API: a forwarded connection failed'),
    };
    if (isWebSocket(req)) return this.serveWebSocket(read, target, req, socket, head, log);
    if (!isSpdy(req)) {
      return refuse(socket, textResponse(400, `${read.kind} needs an upgrade to SPDY/3.1 or a WebSocket`));
    }
    return this.serveSpdy(read, target, req, socket, head, log);
  }

  private async serveWebSocket(
    read: StreamRequest,
    target: PortForwardTarget,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    log: Logger,
  ): Promise<void> {
    const forward = read.kind === 'portForward';
    const supported = forward ? WEBSOCKET_PORT_FORWARD_PROTOCOLS : WEBSOCKET_COMMAND_PROTOCOLS;
    const ws = await this.acceptWebSocket(req, socket, head, supported);
    if (!ws) return;
    const end = () => ws.terminate();
    if (read.kind === 'portForward') {
      const channels = new ChannelSocket(
        ws,
        ws.protocol,
        read.ports.map((_, i) => i * 2),
      );
      const body = async () => {
        await websocketPortForward(channels, read.ports, target);
        await channels.close();
      };
      return this.track(log, read.kind, body, end);
    }
    const channels = await websocketCommandChannels(ws, ws.protocol, read.options);
    return this.track(log, read.kind, () => this.run(read, channels), end);
  }

  private async serveSpdy(
    read: StreamRequest,
    target: PortForwardTarget,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    log: Logger,
  ): Promise<void> {
    const forward = read.kind === 'portForward';
    const supported = forward ? SPDY_PORT_FORWARD_PROTOCOLS : SPDY_COMMAND_PROTOCOLS;
    const offered = headerList(req.headers['x-stream-protocol-version']);
    if (offered.length === 0) {
      return refuse(socket, textResponse(400, 'unable to upgrade: X-Stream-Protocol-Version is required'));
    }
    const protocol = offered.find((p) => supported.includes(p));
    if (!protocol) {
      const text = `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`;
      const accepted = supported.map((p): [string, string] => ['X-Accepted-Stream-Protocol-Versions', p]);
      return refuse(socket, textResponse(403, text), accepted);
    }
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`,
    );
    if (head.length > 0) socket.unshift(head);
    const opened = new AsyncQueue<SpdyStream>();
    const session = new SpdySession(socket, {
      idleTimeoutMs: this.idleTimeoutMs,
      onStream: (stream) => {
        const refusal = forward ? refusePortForwardStream(stream) : undefined;
        if (!refusal) opened.push(stream);
        return refusal;
      },
    });
    session.signal.addEventListener('abort', () => opened.end(), { once: true });
    const drop = () => session.destroy(new Error('the kubelet API front stopped'));
    if (read.kind === 'portForward') {
      return this.track(
        log,
        read.kind,
        () => spdyPortForward(session, opened, target, this.creationTimeoutMs),
        drop,
      );
    }
    const body = async () => {
      let channels: CommandChannels;
      try {
        channels = await spdyCommandChannels(session, opened, protocol, read.options, this.creationTimeoutMs);
      } catch (err) {
        session.destroy(err instanceof Error ? err : new Error(String(err)));
        throw err;
      }
      return this.run(read, channels);
    };
    return this.track(log, read.kind, body, drop);
  }

  private async run(read: CommandRequest, channels: CommandChannels): Promise<CommandOutcome> {
    const { kind, streams, pod, container, command } = read;
    let outcome: CommandOutcome;
    try {
      if (kind === 'exec') {
        const code = await streams.exec(pod, container, command, channels.io, channels.signal);
        outcome = code === 0 ? { kind: 'success' } : { kind: 'exit', code };
      } else {
        await streams.attach(pod, container, channels.io, channels.signal);
        outcome = { kind: 'success' };
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      outcome = {
        kind: 'error',
        message:
          kind === 'exec'
            ? `error executing command in container: ${message}`
            : `error attaching to container: ${message}`,
      };
    }
    if (!channels.signal.aborted) await channels.finish(outcome);
    return outcome;
  }

  /** Counts a session while it runs and logs its end. */
  private async track(
    log: Logger,
    kind: string,
    body: () => Promise<unknown>,
    end: () => void,
  ): Promise<void> {
    const entry = { end };
    this.sessions.add(entry);
    const started = Date.now();
    log.info({ kind }, 'kubelet API: stream opened');
    try {
      const outcome = await body();
      log.info({ kind, ms: Date.now() - started, outcome }, 'kubelet API: stream ended');
    } catch (err) {
      log.info({ kind, ms: Date.now() - started, err: String(err) }, 'kubelet API: stream failed');
    } finally {
      this.sessions.delete(entry);
    }
  }

  private acceptWebSocket(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    supported: readonly string[],
  ): Promise<WebSocket | undefined> {
    const offered = new Set(headerList(req.headers['sec-websocket-protocol']));
    const chosen = pickProtocol(offered, supported);
    if (chosen === false) {
      refuse(
        socket,
        textResponse(
          400,
          `requested protocol(s) are not supported: [${[...offered].join(' ')}]; supports [${supported.join(' ')}]`,
        ),
      );
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const wss = new WebSocketServer({
        noServer: true,
        maxPayload: 1024 * 1024,
        perMessageDeflate: false,
        handleProtocols: () => chosen,
      });
      wss.handleUpgrade(req, socket, head, (ws) => {
        wss.close();
        idle(ws, this.idleTimeoutMs);
        resolve(ws);
      });
      socket.once('close', () => resolve(undefined));
    });
  }
}

/** Closes a WebSocket whose socket saw no byte for `ms`. */
function idle(ws: WebSocket, ms: number): void {
  const raw = (ws as unknown as { _socket?: Duplex })._socket;
  if (raw && 'setTimeout' in raw && typeof raw.setTimeout === 'function')
    raw.setTimeout(ms, () => ws.terminate());
}

function headerList(value: string | string[] | undefined): string[] {
  const values = Array.isArray(value) ? value : value ? [value] : [];
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
}

function isWebSocket(req: IncomingMessage): boolean {
  return (
    (req.headers.upgrade ?? '').toLowerCase() === 'websocket' &&
    /(^|,)\s*upgrade\s*($|,)/i.test(req.headers.connection ?? '')
  );
}

function isSpdy(req: IncomingMessage): boolean {
  return (
    (req.headers.upgrade ?? '').toLowerCase().includes('spdy/3.1') &&
    (req.headers.connection ?? '').toLowerCase().includes('upgrade')
  );
}

/** Answers an upgrade request without upgrading, and closes the connection. */
function refuse(socket: Duplex, response: KubeletApiResponse, extra: Array<[string, string]> = []): void {
  const body = typeof response.body === 'string' ? response.body : '';
  const headers = [
    ...Object.entries(response.headers),
    ...extra,
    ['Content-Length', String(Buffer.byteLength(body))],
    ['Connection', 'close'],
  ];
  socket.end(
    `HTTP/1.1 ${response.statusCode} ${STATUS_CODES[response.statusCode] ?? ''}\r\n${headers
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n')}\r\n\r\n${body}`,
  );
}
