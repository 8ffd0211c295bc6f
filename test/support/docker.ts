import { randomUUID } from 'node:crypto';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import Docker from 'dockerode';
import { systemClock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { DockerPodProvider, type DockerPodProviderOptions } from '../../lib/provider/docker/docker-pods.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { DEFAULT_PROBER_IMAGE } from '../../lib/provider/docker/settings.ts';
import type { VolumeSources } from '../../lib/provider/docker/volume-delivery.ts';
import { kubeVolumeSources } from '../../lib/provider/volume-sources.ts';
import { type TestEnv, testEnv } from './env.ts';
import { kubeletClients, waitFor } from './kube.ts';

/**
 * The Docker provider against the run's engine, a Podman service or a Docker
 * Engine (test/run-integration.ts starts it): images are the busybox ones imported offline, so test pods use
 * `busybox:1.36` (pull policy IfNotPresent by default) and never pull.
 */

export const TEST_IMAGE = 'busybox:1.36';
/** The infra image the test provider runs (a busybox stand-in for the pause image). */
export const INFRA_IMAGE = 'registry.k8s.io/pause:3.10';
/** The prober image the test provider runs (this machine's node under the default image's name, see lib/local/node-image.ts). */
export const PROBER_IMAGE = DEFAULT_PROBER_IMAGE;

/** The run's engine as node info and `npm start` name it, with its version (Podman 4.3 or Debian's Docker Engine 20.10). */
export function engineNamePattern(env: TestEnv = testEnv()): RegExp {
  return env.docker.engine === 'dockerd' ? /Docker Engine 20\.10\.\d+\S*/ : /Podman Engine 4\.3\.\d+\S*/;
}

/** A client of the run's engine, for assertions on what the provider left there. */
export function testEngine(env: TestEnv = testEnv()): Docker {
  return new Docker({ socketPath: env.docker.host.replace(/^unix:\/\//, '') });
}

export function testDockerProvider(
  overrides: Partial<DockerPodProviderOptions> = {},
  env: TestEnv = testEnv(),
): DockerPodProvider {
  return new DockerPodProvider({
    docker: testEngine(env),
    clock: systemClock,
    log: createLogger({ level: process.env.SVK_TEST_LOG_LEVEL ?? 'warn' }),
    settings: {
      network: env.docker.network,
      infraImage: INFRA_IMAGE,
      hostIp: '127.0.0.1',
      pullTimeoutMs: 30_000,
      clusterDomain: 'cluster.local',
      proberImage: PROBER_IMAGE,
      engineSocket: env.docker.host.replace(/^unix:\/\//, ''),
    },
    // As the factory gives it: pods from the API server carry the service account's token Secret volume.
    volumeSources: apiVolumeSources(env),
    ...overrides,
  });
}

/** The file volumes' ConfigMaps, Secrets and pods, read with the kubelet's identity at first use. */
function apiVolumeSources(env: TestEnv): VolumeSources {
  let sources: VolumeSources | undefined;
  const api = () => {
    sources ??= kubeVolumeSources(kubeletClients(env).core);
    return sources;
  };
  return {
    configMap: (namespace, name) => api().configMap(namespace, name),
    secret: (namespace, name) => api().secret(namespace, name),
    pod: (namespace, name) => api().pod?.(namespace, name) ?? Promise.resolve(undefined),
  };
}

/** A pod bound to `node` whose containers run `sh -c <script>` in the test image. */
export function shellPod(
  namespace: string,
  name: string,
  containers: Record<string, string>,
  spec: Partial<V1PodSpec> & { node?: string; uid?: string } = {},
): V1Pod {
  const { node, uid, ...rest } = spec;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace, name, uid: uid ?? randomUUID() },
    spec: {
      nodeName: node ?? 'vk-docker',
      restartPolicy: 'Never',
      containers: Object.entries(containers).map(([cname, script]) => shellContainer(cname, script)),
      ...rest,
    },
  };
}

export function shellContainer(name: string, script: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: TEST_IMAGE, command: ['sh', '-c', script], ...extra };
}

/** Polls getPod (which moves the pod on, as pod-status's polls do) until `done` holds. */
export function waitForPod(
  provider: DockerPodProvider,
  pod: V1Pod,
  done: (pod: V1Pod) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<V1Pod> {
  return waitFor(
    async () => {
      const got = await provider.getPod(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '');
      return got && got.metadata?.uid === pod.metadata?.uid && done(got) ? got : undefined;
    },
    { timeoutMs, intervalMs: 200, what },
  );
}

/** The engine's containers of one pod uid (every role). */
export async function engineContainers(docker: Docker, uid: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABELS.uid}=${uid}`] } });
}

export function containerStatus(pod: V1Pod, name: string) {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (c) => c.name === name,
  );
}

/** Reads a whole log stream into a string. */
export async function readAll(stream: AsyncIterable<Uint8Array>): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += Buffer.from(chunk).toString('utf8');
  return text;
}
