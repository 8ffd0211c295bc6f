import type { V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.ts';
import { type ContainerStreams, isContainerNotRunning } from '../../provider/container-streams.ts';
import { isProviderNotFound } from '../../provider/provider.ts';
import type { KubeletApiRequest } from '../kubelet-api-request.ts';
import { type KubeletApiResponse, statusResponse, textResponse } from '../responses.ts';
import type { KubeletApiDependencies } from '../serve.ts';
import { type CommandOptions, commandOptions } from './command-channels.ts';
import { websocketPorts } from './port-forward.ts';

/** An exec or attach, checked and ready to upgrade. */
export interface CommandRequest {
  kind: 'exec' | 'attach';
  pod: V1Pod;
  container: string;
  command: string[];
  options: CommandOptions;
  streams: ContainerStreams;
}

/** A port-forward, checked and ready to upgrade; `ports` only over a WebSocket (SPDY names them per stream). */
export interface PortForwardRequest {
  kind: 'portForward';
  pod: V1Pod;
  ports: number[];
  streams: ContainerStreams;
}

export type StreamRequest = CommandRequest | PortForwardRequest;

/**
 * The checks the kubelet makes before it upgrades a streaming request
 * (server.go's getExec, getAttach, getPortForward): the path
 * (`/exec/{namespace}/{pod}[/{uid}]/{container}`,
 * `/portForward/{namespace}/{pod}[/{uid}]`), the stream options, the pod
 * bound to `node` (and of that uid), the container in its spec and running.
 * A refusal is the HTTP answer the client shows.
 */
export async function readStreamRequest(
  request: KubeletApiRequest,
  node: string,
  deps: KubeletApiDependencies,
  websocket: boolean,
): Promise<StreamRequest | { refused: KubeletApiResponse }> {
  const refused = (code: number, text: string) => ({ refused: textResponse(code, text) });
  const [kind = '', namespace, name, ...tail] = request.path.split('/').filter((s) => s.length > 0);
  if (kind !== 'exec' && kind !== 'attach' && kind !== 'portForward')
    return refused(404, '404 page not found');
  if (request.method !== 'GET' && request.method !== 'POST') {
    return refused(405, `${request.method} is not allowed on ${request.path}`);
  }
  const forward = kind === 'portForward';
  const uid = forward ? tail[0] : tail.length === 2 ? tail[0] : undefined;
  const container = forward ? '' : (tail[tail.length - 1] ?? '');
  if (!namespace || !name || (forward ? tail.length > 1 : !container || tail.length > 2)) {
    return refused(404, '404 page not found');
  }
  let options: CommandOptions | undefined;
  let ports: number[] = [];
  try {
    if (!forward) options = commandOptions(request.query);
    else if (websocket) ports = websocketPorts(request.query);
  } catch (err) {
    return refused(400, err instanceof Error ? err.message : String(err));
  }
  const command = [...(request.query.command ?? [])];
  if (kind === 'exec' && command.length === 0) {
    return refused(400, 'the command to execute is missing (query parameter "command")');
  }
  const pod = await readPod(deps, namespace, name);
  if (!pod || pod.spec?.nodeName !== node || (uid && pod.metadata?.uid !== uid)) {
    return refused(404, `pod ${namespace}/${name} does not exist on node ${node}`);
  }
  if (!forward && !hasContainer(pod, container)) {
    return refused(404, `container ${container} not found in pod ${namespace}/${name}`);
  }
  const streams = deps.podProvider.streams;
  if (!streams) {
    return {
      refused: statusResponse(501, 'NotImplemented', `the provider of node ${node} does not serve ${kind}`),
    };
  }
  if (forward || !options) return { kind: 'portForward', pod, ports, streams };
  const refusal = await checkRunning(streams, pod, container);
  if (refusal) return { refused: refusal };
  if (kind === 'attach') {
    // The terminal is the container's own (the kubelet takes it from the spec); stdin only if it has one.
    const spec = containerSpec(pod, container);
    const tty = spec?.tty === true;
    options = {
      stdin: options.stdin && spec?.stdin === true,
      stdout: options.stdout,
      stderr: options.stderr && !tty,
      tty,
    };
  }
  return { kind, pod, container, command, options, streams };
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
