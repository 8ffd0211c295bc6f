import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import { type WebSocket, WebSocketServer } from 'ws';
import { isNotFound } from '../../kube/client.ts';
import { type ContainerStreams, isContainerNotRunning } from '../../provider/container-streams.ts';
import { isProviderNotFound } from '../../provider/provider.ts';
import {
  isKubeletApiEventError,
  type KubeletApiRequest,
  parseKubeletApiEvent,
} from '../kubelet-api-request.ts';
import { type KubeletApiResponse, statusResponse, textResponse } from '../responses.ts';
import { admitKubeletApiRequest, type KubeletApiDependencies } from '../serve.ts';
import { AsyncQueue } from './async-queue.ts';
import { type CommandChannels, type CommandOptions, commandOptions } from './command-channels.ts';
import type { CommandOutcome } from './command-status.ts';
import {
  type PortForwardTarget,
  refusePortForwardStream,
  spdyPortForward,
  websocketPortForward,
  websocketPorts,
} from './port-forward.ts';
import { SpdySession, type SpdyStream } from './spdy/spdy-session.ts';
import { SPDY_COMMAND_PROTOCOLS, spdyCommandChannels } from './spdy-command.ts';
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
    let deps: KubeletApiDependencies;
    try {
      deps = await this.deps();
    } catch (err) {
      return refuse(
        socket,
        textResponse(500, `internal error: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
    try {
      await this.serve(request, req, socket, head, deps);
    } catch (err) {
      deps.log.error({ err, path: request.path }, 'kubelet API: a streaming request failed');
      if (!socket.destroyed)
        refuse(
          socket,
          textResponse(500, `internal error: ${err instanceof Error ? err.message : String(err)}`),
        );
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
    const { node, context } = admission;
    const [first = '', ...rest] = request.path.split('/').filter((s) => s.length > 0);
    const log = deps.log.child(context);
    if (first !== 'exec' && first !== 'attach' && first !== 'portForward') {
      return refuse(socket, textResponse(404, '404 page not found'));
    }
    if (request.method !== 'GET' && request.method !== 'POST') {
      return refuse(socket, textResponse(405, `${request.method} is not allowed on ${request.path}`));
    }
    const forward = first === 'portForward';
    // /exec/{namespace}/{pod}[/{uid}]/{container}; /portForward/{namespace}/{pod}[/{uid}].
    const [namespace, name, ...tail] = rest;
    const uid = forward ? tail[0] : tail.length === 2 ? tail[0] : undefined;
    const container = forward ? undefined : tail[tail.length - 1];
    if (
      !namespace ||
      !name ||
      (!forward && (!container || tail.length > 2)) ||
      (forward && tail.length > 1)
    ) {
      return refuse(socket, textResponse(404, '404 page not found'));
    }
    const websocket = isWebSocket(req);
    let options: CommandOptions | undefined;
    let ports: number[] | undefined;
    try {
      if (!forward) options = commandOptions(request.query);
      else if (websocket) ports = websocketPorts(request.query);
    } catch (err) {
      return refuse(socket, textResponse(400, err instanceof Error ? err.message : String(err)));
    }
    const command = [...(request.query.command ?? [])];
    if (first === 'exec' && command.length === 0) {
      return refuse(
        socket,
        textResponse(400, 'the command to execute is missing (query parameter "command")'),
      );
    }
    const pod = await readPod(deps, namespace, name);
    if (!pod || pod.spec?.nodeName !== node || (uid && pod.metadata?.uid !== uid)) {
      return refuse(socket, textResponse(404, `pod ${namespace}/${name} does not exist on node ${node}`));
    }
    if (container && !hasContainer(pod, container)) {
      return refuse(
        socket,
        textResponse(404, `container ${container} not found in pod ${namespace}/${name}`),
      );
    }
    const streams = deps.podProvider.streams;
    if (!streams) {
      return refuse(
        socket,
        statusResponse(501, 'NotImplemented', `the provider of node ${node} does not serve ${first}`),
      );
    }
    if (container) {
      const refusal = await checkRunning(streams, pod, container);
      if (refusal) return refuse(socket, refusal);
    }
    if (options && first === 'attach') {
      // The terminal is the container's own (the kubelet takes it from the spec); stdin only if it has one.
      const spec = containerSpec(pod, container ?? '');
      options = { ...options, tty: spec?.tty === true, stdin: options.stdin && spec?.stdin === true };
      if (options.tty) options.stderr = false;
    }
    const target: PortForwardTarget = {
      pod,
      streams,
      onError: (port, err) =>
        log.info({ port, err: String(err) }, 'kubelet API: a forwarded connection failed'),
    };
    if (websocket) {
      const supported = forward ? WEBSOCKET_PORT_FORWARD_PROTOCOLS : WEBSOCKET_COMMAND_PROTOCOLS;
      const ws = await this.acceptWebSocket(req, socket, head, supported);
      if (!ws) return;
      const protocol = ws.protocol;
      if (forward) {
        const channels = new ChannelSocket(
          ws,
          protocol,
          (ports ?? []).map((_, i) => i * 2),
        );
        await this.track(
          log,
          first,
          async () => {
            await websocketPortForward(channels, ports ?? [], target);
            await channels.close();
          },
          () => ws.terminate(),
        );
        return;
      }
      const channels = await websocketCommandChannels(ws, protocol, options as CommandOptions);
      await this.track(
        log,
        first,
        () => this.run(first, streams, pod, container ?? '', command, channels),
        () => ws.terminate(),
      );
      return;
    }
    if (!isSpdy(req)) {
      return refuse(socket, textResponse(400, `${first} needs an upgrade to SPDY/3.1 or a WebSocket`));
    }
    const supported = forward ? SPDY_PORT_FORWARD_PROTOCOLS : SPDY_COMMAND_PROTOCOLS;
    const offered = headerList(req.headers['x-stream-protocol-version']);
    if (offered.length === 0) {
      return refuse(socket, textResponse(400, 'unable to upgrade: X-Stream-Protocol-Version is required'));
    }
    const protocol = offered.find((p) => supported.includes(p));
    if (!protocol) {
      return refuse(
        socket,
        textResponse(
          403,
          `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`,
        ),
        supported.map((p) => ['X-Accepted-Stream-Protocol-Versions', p]),
      );
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
    if (forward) {
      await this.track(
        log,
        first,
        async () => {
          await spdyPortForward(session, opened, target, this.creationTimeoutMs);
        },
        drop,
      );
      return;
    }
    await this.track(
      log,
      first,
      async () => {
        let channels: CommandChannels;
        try {
          channels = await spdyCommandChannels(
            session,
            opened,
            protocol,
            options as CommandOptions,
            this.creationTimeoutMs,
          );
        } catch (err) {
          session.destroy(err instanceof Error ? err : new Error(String(err)));
          throw err;
        }
        await this.run(first, streams, pod, container ?? '', command, channels);
      },
      drop,
    );
  }

  private async run(
    kind: 'exec' | 'attach',
    streams: ContainerStreams,
    pod: V1Pod,
    container: string,
    command: string[],
    channels: CommandChannels,
  ): Promise<CommandOutcome> {
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
    log: KubeletApiDependencies['log'],
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

async function checkRunning(
  streams: ContainerStreams,
  pod: V1Pod,
  container: string,
): Promise<KubeletApiResponse | undefined> {
  try {
    await streams.checkRunning(pod, container, AbortSignal.timeout(30_000));
    return undefined;
  } catch (err) {
    if (isProviderNotFound(err)) return textResponse(404, err.message);
    if (isContainerNotRunning(err)) return textResponse(400, err.message);
    throw err;
  }
}

async function readPod(
  deps: KubeletApiDependencies,
  namespace: string,
  name: string,
): Promise<V1Pod | undefined> {
  try {
    return await deps.kube.core.readNamespacedPod({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function containerSpec(pod: V1Pod, name: string) {
  const spec = pod.spec;
  return [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].find((c) => c.name === name);
}

function hasContainer(pod: V1Pod, name: string): boolean {
  return (
    containerSpec(pod, name) !== undefined ||
    (pod.spec?.ephemeralContainers ?? []).some((c) => c.name === name)
  );
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
