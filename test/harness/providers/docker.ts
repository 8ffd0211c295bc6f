import type { V1Pod } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { systemClock } from '../../../lib/clock.ts';
import type { DockerPodProvider } from '../../../lib/provider/docker/docker-pods.ts';
import { EngineState } from '../../../lib/provider/docker/engine-state.ts';
import { LABELS } from '../../../lib/provider/docker/names.ts';
import { testDockerProvider, testEngine } from '../../support/docker.ts';
import type { TestEnv } from '../../support/env.ts';
import type { PodRef, ProbedHistory, ProbedPod, ProviderProbe, ProviderSetup } from '../provider-setup.ts';

/**
 * The docker provider in the harness, on the run's Podman service (started
 * by the integration orchestrator). The probe reads the engine itself: its
 * containers and their labels for what the provider holds, and the engine's
 * event stream for each pod's history: a create of the pod's infra container
 * is a create of the pod, its deletion marker (or, for a pod removed at once,
 * its infra container's removal) a delete.
 */
export function dockerProviderSetup(env: TestEnv): ProviderSetup {
  return {
    name: 'docker',
    image: 'public.ecr.aws/docker/library/busybox:1.36',
    env: () => ({ SVK_DOCKER_HOST: env.docker.host, SVK_DOCKER_NETWORK: env.docker.network }),
    probe: () => new DockerProbe(env),
  };
}

interface EngineEvent {
  Action?: string;
  status?: string;
  Actor?: { Attributes?: Record<string, string> };
}

class DockerProbe implements ProviderProbe {
  readonly #docker: Docker;
  readonly #provider: DockerPodProvider;
  /** Lists as the provider does: again when Podman fails a list because a container vanished under it. */
  readonly #state: EngineState;
  /** Events from a second before the probe was made: the deployment starts after it. */
  readonly #since = Math.floor(Date.now() / 1000) - 1;
  readonly #seen: EngineEvent[] = [];
  #watching: Promise<void> | undefined;
  #stream: { destroy?: () => void } | undefined;

  constructor(env: TestEnv) {
    this.#docker = testEngine(env);
    this.#provider = testDockerProvider({}, env);
    this.#state = new EngineState(this.#docker, env.docker.network, systemClock);
    void this.#events();
  }

  async pods(node: string): Promise<ProbedPod[]> {
    const byUid = new Map<string, ProbedPod>();
    for (const c of await this.#list(LABELS.node, node)) {
      const labels = c.Labels ?? {};
      const uid = labels[LABELS.uid];
      if (!uid) continue;
      const pod = byUid.get(uid) ?? {
        namespace: labels[LABELS.namespace] ?? '',
        name: labels[LABELS.name] ?? '',
        uid,
        node,
        running: false,
      };
      if (isRunningProcess(c)) pod.running = true;
      byUid.set(uid, pod);
    }
    return [...byUid.values()];
  }

  async history(ref: PodRef): Promise<ProbedHistory | undefined> {
    const containers = await this.#list(LABELS.uid, ref.uid);
    const hasInfra = containers.some((c) => c.Labels?.[LABELS.role] === 'infra');
    // The event stream trails the engine's state by a moment: wait for the create of an infra container seen.
    const deadline = Date.now() + 10_000;
    let counts = countEvents(await this.#events(), ref.uid);
    while (hasInfra && counts.creates === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      counts = countEvents(await this.#events(), ref.uid);
    }
    if (counts.seen === 0 && containers.length === 0) return undefined;
    return { creates: counts.creates, deletes: counts.deletes, running: containers.some(isRunningProcess) };
  }

  async injectPod(pod: V1Pod): Promise<void> {
    await this.#provider.createPod(pod);
  }

  async purge(nodes: readonly string[]): Promise<void> {
    for (const node of nodes) {
      const containers = await this.#list(LABELS.node, node).catch(() => []);
      await Promise.all(
        containers.map((c) =>
          this.#docker
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => {}),
        ),
      );
    }
  }

  async close(): Promise<void> {
    this.#stream?.destroy?.();
  }

  #list(label: string, value: string): Promise<Docker.ContainerInfo[]> {
    return this.#state.containers({ [label]: value });
  }

  /** Every container event since the probe was made, from one live stream. */
  #events(): Promise<EngineEvent[]> {
    this.#watching ??= this.#watch().catch(() => {
      // The engine refused the stream for now: the next call asks again.
      this.#watching = undefined;
    });
    return this.#watching.then(() => this.#seen);
  }

  async #watch(): Promise<void> {
    const stream = (await this.#docker.getEvents({
      since: this.#since,
      filters: { type: ['container'] },
    })) as NodeJS.ReadableStream & { destroy?: () => void };
    this.#stream = stream;
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        try {
          if (line.trim()) this.#seen.push(JSON.parse(line) as EngineEvent);
        } catch {
          // Not an event: the stream carries one JSON object per line.
        }
      }
    });
    stream.on('error', () => {});
  }
}

/** An init or app container that runs (the infra container only holds the network). */
function isRunningProcess(c: Docker.ContainerInfo): boolean {
  const role = c.Labels?.[LABELS.role];
  return (role === 'app' || role === 'init') && c.State === 'running';
}

function countEvents(
  events: readonly EngineEvent[],
  uid: string,
): { seen: number; creates: number; deletes: number } {
  const mine = events.filter((e) => e.Actor?.Attributes?.[LABELS.uid] === uid);
  const count = (action: string, role: string) =>
    mine.filter((e) => (e.Action ?? e.status) === action && e.Actor?.Attributes?.[LABELS.role] === role)
      .length;
  return {
    seen: mine.length,
    creates: count('create', 'infra'),
    deletes: Math.max(count('create', 'deleting'), count('remove', 'infra')),
  };
}
