import type { V1Pod } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { systemClock } from '../../../lib/clock.ts';
import type { DockerPodProvider } from '../../../lib/provider/docker/docker-pods.ts';
import { EngineState } from '../../../lib/provider/docker/engine-state.ts';
import { LABELS } from '../../../lib/provider/docker/names.ts';
import { readProberReport } from '../../../lib/provider/docker/prober/prober-container.ts';
import { TEST_IMAGE, testDockerProvider, testEngine } from '../../support/docker.ts';
import { actionOf, type EngineEvent, EngineEvents } from '../../support/engine-events.ts';
import type { TestEnv } from '../../support/env.ts';
import type { PodRef, ProbedHistory, ProbedPod, ProviderProbe, ProviderSetup } from '../provider-setup.ts';

/**
 * The docker provider in the harness, on the run's engine (started
 * by the integration orchestrator). The probe reads the engine itself: its
 * containers and their labels for what the provider holds, and the engine's
 * event stream for each pod's history: a create of the pod's infra container
 * is a create of the pod; a delete shows as a create of its deletion marker
 * (every delete makes one first) and as a removal of its infra container;
 * a pod deleted twice shows either twice, and the larger count is taken.
 */
export function dockerProviderSetup(env: TestEnv): ProviderSetup {
  return {
    name: 'docker',
    image: 'public.ecr.aws/docker/library/busybox:1.36',
    env: () => ({ SVK_DOCKER_HOST: env.docker.host, SVK_DOCKER_NETWORK: env.docker.network }),
    probe: () => new DockerProbe(env),
  };
}

class DockerProbe implements ProviderProbe {
  readonly #docker: Docker;
  readonly #provider: DockerPodProvider;
  /** Lists as the provider does: again when Podman fails a list because a container vanished under it. */
  readonly #state: EngineState;
  /** Events from a second before the probe was made: the deployment starts after it. */
  readonly #events: EngineEvents;
  /** preStop starts read from a prober's report, which forgets a pod once it is removed. */
  readonly #preStops = new Map<string, number>();

  constructor(env: TestEnv) {
    this.#docker = testEngine(env);
    this.#provider = testDockerProvider({}, env);
    this.#state = new EngineState(this.#docker, env.docker.network, systemClock);
    this.#events = new EngineEvents(this.#docker);
    void this.#events.all();
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
    // The event stream trails the engine: read it once it has delivered everything before this call.
    await this.#events.catchUp(TEST_IMAGE);
    const counts = countEvents(await this.#events.of(ref.uid));
    if (counts.seen === 0 && containers.length === 0) return undefined;
    return { creates: counts.creates, deletes: counts.deletes, running: containers.some(isRunningProcess) };
  }

  /**
   * When the node's prober began the pod's preStop hook (its report), and
   * when an app container of the pod was first signalled (the engine's
   * `kill` event: the prober sends SIGTERM after the hook).
   */
  async hooks(ref: PodRef): Promise<{ preStopAt?: number; stopSignalAt?: number } | undefined> {
    const events = await this.#events.of(ref.uid);
    const killed = events
      .filter((e) => actionOf(e).action === 'kill' && actionOf(e).role === 'app')
      .map((e) => (e.timeNano ?? 0) / 1e6);
    const node = events.find((e) => e.Actor?.Attributes?.[LABELS.node])?.Actor?.Attributes?.[LABELS.node];
    const report = node ? await readProberReport(this.#docker, node) : undefined;
    const preStop = Object.values(report?.instances ?? {}).find(
      (i) => i.uid === ref.uid && i.preStop,
    )?.preStop;
    if (preStop) this.#preStops.set(ref.uid, preStop.startedAt);
    const preStopAt = this.#preStops.get(ref.uid);
    return {
      ...(preStopAt !== undefined ? { preStopAt } : {}),
      ...(killed.length > 0 ? { stopSignalAt: Math.min(...killed) } : {}),
    };
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
    this.#events.close();
  }

  #list(label: string, value: string): Promise<Docker.ContainerInfo[]> {
    return this.#state.containers({ [label]: value });
  }
}

/** An init or app container that runs (the infra container only holds the network). */
function isRunningProcess(c: Docker.ContainerInfo): boolean {
  const role = c.Labels?.[LABELS.role];
  return (role === 'app' || role === 'init') && c.State === 'running';
}

function countEvents(mine: readonly EngineEvent[]): { seen: number; creates: number; deletes: number } {
  const count = (action: string, role: string) =>
    mine.filter((e) => actionOf(e).action === action && actionOf(e).role === role).length;
  return {
    seen: mine.length,
    creates: count('create', 'infra'),
    deletes: Math.max(count('create', 'deleting'), count('remove', 'infra')),
  };
}
