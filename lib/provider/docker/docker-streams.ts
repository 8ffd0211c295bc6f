import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { type Duplex, PassThrough } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import type { Logger } from '../../log/logger.ts';
import {
  type ContainerIo,
  ContainerNotRunningError,
  type ContainerStreams,
  type TerminalSize,
} from '../container-streams.ts';
import { ProviderNotFoundError } from '../provider.ts';
import { isEngineNotFound, isNameConflict, isNotModified, isNotRunning } from './engine-errors.ts';
import type { EngineState } from './engine-state.ts';
import { relayEngine } from './engine-streams.ts';
import type { ImagePuller } from './image-puller.ts';
import { identityLabels, LABELS, relayName } from './names.ts';
import type { ObservedPod } from './observed-pod.ts';

/**
 * Exec, attach and port-forward through the engine's API alone, so that a
 * remote engine serves them as well as a local one: an exec is the engine's
 * exec (create, start with the connection hijacked, resize, inspect for the
 * exit code), an attach the engine's attach, and a forwarded connection an
 * exec of `nc 127.0.0.1 <port>` in a relay container that joins the pod's
 * network namespace, its stdin and stdout carrying the connection's bytes.
 * The relay container (one per pod, labelled with the pod so that the pod's
 * removal takes it too) lives while connections use it.
 *
 * Neither engine can signal an exec's process: when the client goes, the
 * exec's stdin is closed and its connection dropped, which ends a command
 * that reads its input (a shell, `cat`); one that does not runs on until it
 * ends by itself, as under a kubelet on Docker Engine.
 */

export interface DockerStreamsDeps {
  docker: Docker;
  state: EngineState;
  puller: ImagePuller;
  /** The image of relay containers: it must have busybox's `nc`, `sleep`. */
  relayImage: string;
  log: Logger;
}

/** Inspections of a finished exec while the engine still says it runs (Podman records the exit a moment later). */
const EXIT_POLLS = 50;
const EXIT_POLL_MS = 100;

export class DockerContainerStreams implements ContainerStreams {
  private readonly relays = new Map<string, { users: number; ready: Promise<string> }>();
  /** Removals of relays under way: a new relay of the pod waits for its name to be free. */
  private readonly removals = new Map<string, Promise<void>>();

  constructor(private readonly deps: DockerStreamsDeps) {}

  async checkRunning(pod: V1Pod, container: string, signal: AbortSignal): Promise<void> {
    await this.running(pod, container, signal);
  }

  async exec(
    pod: V1Pod,
    container: string,
    command: string[],
    io: ContainerIo,
    signal: AbortSignal,
  ): Promise<number> {
    const { id } = await this.running(pod, container, signal);
    let exec: Docker.Exec;
    try {
      exec = await this.deps.docker.getContainer(id).exec({
        Cmd: command,
        AttachStdin: io.stdin !== undefined,
        AttachStdout: io.stdout !== undefined,
        AttachStderr: io.stderr !== undefined,
        Tty: io.tty,
        abortSignal: signal,
      });
    } catch (err) {
      if (isNotRunning(err) || isEngineNotFound(err)) throw notRunning(pod, container);
      throw err;
    }
    const engine = (await exec.start({ hijack: true, stdin: io.stdin !== undefined, Tty: io.tty })) as Duplex;
    await relayEngine(engine, io, signal, (size) => resized(exec.resize({ h: size.height, w: size.width })));
    return exitCode(exec, signal);
  }

  async attach(pod: V1Pod, container: string, io: ContainerIo, signal: AbortSignal): Promise<void> {
    const { id } = await this.running(pod, container, signal);
    const engineContainer = this.deps.docker.getContainer(id);
    const engine = await hijackedAttach(this.deps.docker, id, io);
    await relayEngine(engine, io, signal, (size: TerminalSize) =>
      resized(engineContainer.resize({ h: size.height, w: size.width })),
    );
  }

  async portForward(pod: V1Pod, port: number, stream: Duplex, signal: AbortSignal): Promise<void> {
    const observed = await this.observed(pod, signal);
    if (observed.infra?.state !== 'running') {
      throw new ContainerNotRunningError(`pod ${describe(pod)} has no running network namespace`);
    }
    const relay = await this.holdRelay(observed, signal);
    try {
      const exec = await this.deps.docker.getContainer(relay).exec({
        Cmd: ['nc', '127.0.0.1', String(port)],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        abortSignal: signal,
      });
      const engine = (await exec.start({ hijack: true, stdin: true })) as Duplex;
      const stderr = new PassThrough();
      const said: Buffer[] = [];
      stderr.on('data', (d: Buffer) => said.push(d));
      stream.on('error', () => undefined);
      // Podman may cut an exec's attach when its process exits at once (nc on a port nothing
      // serves), before its stderr arrives: the exit code then tells what happened.
      let broken: unknown;
      await relayEngine(
        engine,
        { stdin: stream, stdout: stream, stderr, tty: false },
        signal,
        async () => {},
      ).catch((err: unknown) => {
        broken = err;
      });
      const code = await exitCode(exec, signal);
      if (signal.aborted) return;
      if (code !== 0) {
        // nc's own words; anything else on stderr is the engine's (Podman's attach error), not the reason.
        const text = Buffer.concat(said).toString('utf8').trim();
        if (text.startsWith('nc: ')) throw new Error(text.slice('nc: '.length));
        throw new Error(`cannot connect to port ${port} in the pod: the relay's nc exited with ${code}`);
      }
      if (broken) throw broken;
    } finally {
      await this.releaseRelay(observed.uid);
    }
  }

  /** The newest instance of `container`, running. */
  private async running(pod: V1Pod, container: string, signal: AbortSignal) {
    const observed = await this.observed(pod, signal);
    const newest = observed.instances
      .filter((i) => i.container === container)
      .sort((a, b) => b.attempt - a.attempt)[0];
    if (!newest) {
      throw new ProviderNotFoundError(`docker provider: pod ${describe(pod)} has no container ${container}`);
    }
    if (newest.state !== 'running') throw notRunning(pod, container);
    return newest;
  }

  private async observed(pod: V1Pod, signal: AbortSignal): Promise<ObservedPod> {
    const uid = pod.metadata?.uid ?? '';
    const observed = (await this.deps.state.pods({ [LABELS.uid]: uid }, signal)).get(uid);
    if (!observed) throw new ProviderNotFoundError(`docker provider has no pod ${describe(pod)}`);
    return observed;
  }

  /** The pod's relay container, created and started on first use; counted until released. */
  private holdRelay(pod: ObservedPod, signal: AbortSignal): Promise<string> {
    const held = this.relays.get(pod.uid);
    if (held) {
      held.users++;
      return held.ready;
    }
    const ready = (this.removals.get(pod.uid) ?? Promise.resolve()).then(() => this.startRelay(pod, signal));
    const entry = { users: 1, ready };
    this.relays.set(pod.uid, entry);
    ready.catch(() => {
      if (this.relays.get(pod.uid) === entry) this.relays.delete(pod.uid);
    });
    return ready;
  }

  private async releaseRelay(uid: string): Promise<void> {
    const held = this.relays.get(uid);
    if (!held) return;
    held.users--;
    if (held.users > 0) return;
    this.relays.delete(uid);
    const removal = (async () => {
      const id = await held.ready.catch(() => undefined);
      if (!id) return;
      await this.deps.docker
        .getContainer(id)
        .remove({ force: true })
        .catch((err: unknown) => {
          if (!isEngineNotFound(err))
            this.deps.log.warn({ err, uid }, 'docker provider: removing a relay container failed');
        });
    })();
    this.removals.set(uid, removal);
    await removal;
    if (this.removals.get(uid) === removal) this.removals.delete(uid);
  }

  private async startRelay(pod: ObservedPod, signal: AbortSignal): Promise<string> {
    const { docker, puller, relayImage } = this.deps;
    const infra = pod.infra;
    if (!infra)
      throw new ContainerNotRunningError(`pod ${pod.namespace}/${pod.name} has no network namespace`);
    await puller.ensure(relayImage, signal);
    const name = relayName(pod.uid);
    try {
      await docker.createContainer({
        name,
        Image: relayImage,
        Cmd: ['sleep', '2147483647'],
        Labels: { ...identityLabels(pod), [LABELS.role]: 'relay' },
        HostConfig: { Init: true, NetworkMode: `container:${infra.id}`, RestartPolicy: { Name: 'no' } },
        abortSignal: signal,
      });
    } catch (err) {
      // Another connection's relay, or one a crashed process left: used as it is.
      if (!isNameConflict(err)) throw err;
    }
    const relay = docker.getContainer(name);
    await relay.start({ abortSignal: signal }).catch((err: unknown) => {
      if (!isNotModified(err)) throw err;
    });
    return (await relay.inspect({ abortSignal: signal })).Id;
  }
}

/**
 * An attach with the connection hijacked, its options in the query and an
 * empty body: dockerode's attach sends its options as the body (and a
 * chunked body's end), which Podman passes on to the container's stdin.
 */
function hijackedAttach(docker: Docker, id: string, io: ContainerIo): Promise<Duplex> {
  const modem = docker.modem as {
    socketPath?: string;
    host?: string;
    port?: number | string;
    protocol?: string;
    ca?: string;
    cert?: string;
    key?: string;
  };
  const query = new URLSearchParams({
    stream: '1',
    stdin: io.stdin ? '1' : '0',
    stdout: io.stdout ? '1' : '0',
    stderr: io.stderr ? '1' : '0',
  });
  const options = {
    method: 'POST',
    path: `/containers/${id}/attach?${query}`,
    headers: { Connection: 'Upgrade', Upgrade: 'tcp', 'Content-Length': '0' },
  };
  return new Promise((resolve, reject) => {
    const req = modem.socketPath
      ? httpRequest({ ...options, socketPath: modem.socketPath })
      : (modem.protocol === 'https' ? httpsRequest : httpRequest)({
          ...options,
          host: modem.host,
          port: modem.port,
          ...(modem.ca ? { ca: modem.ca, cert: modem.cert, key: modem.key } : {}),
        });
    req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString('utf8');
      });
      res.on('end', () =>
        reject(new Error(`the engine refused the attach (${res.statusCode}): ${body.trim()}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** Podman answers a resize 201, which dockerode takes for a failure. */
async function resized(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (!(typeof err === 'object' && err !== null && 'statusCode' in err && err.statusCode === 201))
      throw err;
  }
}

/** The exit code of a finished exec, once the engine recorded it. */
async function exitCode(exec: Docker.Exec, signal: AbortSignal): Promise<number> {
  for (let poll = 1; ; poll++) {
    const info = await exec.inspect();
    if (!info.Running || poll >= EXIT_POLLS || signal.aborted) return info.ExitCode ?? -1;
    await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
  }
}

function notRunning(pod: V1Pod, container: string): ContainerNotRunningError {
  return new ContainerNotRunningError(`container ${container} of pod ${describe(pod)} is not running`);
}

function describe(pod: V1Pod): string {
  return `${pod.metadata?.namespace}/${pod.metadata?.name} (uid ${pod.metadata?.uid})`;
}
