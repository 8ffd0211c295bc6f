import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import type { ProviderEventRecorder } from '../provider.ts';
import type { EngineSettings } from './container-config.ts';
import type { RegistryAuth } from './image-puller.ts';
import type { PodPlan } from './pod-plan.ts';
import type { VolumeSources } from './volume-delivery.ts';

/** What the Docker provider's pod half is built with (docker-pods.ts; factory.ts builds it). */
export interface DockerPodProviderOptions {
  docker: Docker;
  clock: Clock;
  log: Logger;
  settings: EngineSettings & {
    /** The hostIP of every pod: the Docker host's address as the cluster sees it. */
    hostIp: string;
    /** The longest an image pull may run. */
    pullTimeoutMs: number;
    /** The cluster domain pods' FQDNs end in (`<hostname>.<subdomain>.<namespace>.svc.<cluster domain>`). */
    clusterDomain: string;
    /** The image of the nodes' prober containers (prober/prober-container.ts). */
    proberImage: string;
    /** The engine's socket on the engine host, mounted into the probers. */
    engineSocket: string;
    /** The image of port-forward relays (busybox's `nc`); {@link DEFAULT_RELAY_IMAGE} by default. */
    relayImage?: string;
    /** The node's allocatable, what a downwardAPI volume's resourceFieldRef on a missing limit gives. */
    allocatable?: Readonly<Record<string, string>>;
  };
  /** Where file volumes read ConfigMaps and Secrets (the API server, `get`); none exist without it. */
  volumeSources?: VolumeSources;
  /** Where the Events of probes and hooks are recorded; none when absent. */
  events?: ProviderEventRecorder;
  /** Registry credentials for a pod's image from its imagePullSecrets; none by default. */
  registryAuth?: (plan: PodPlan, image: string) => Promise<RegistryAuth | undefined>;
  /** Pods advanced at once by listPods. */
  maxParallel?: number;
}
