import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import { pullDelayMs } from '../kubelet-backoff.ts';
import { engineErrorMessage, isEngineNotFound } from './engine-errors.ts';
import type { PullPolicy } from './pod-plan.ts';
import type { ImageView } from './pod-status.ts';

/** Credentials for one registry, as the engine's X-Registry-Auth takes them. */
export interface RegistryAuth {
  username?: string;
  password?: string;
  auth?: string;
  serveraddress?: string;
  identitytoken?: string;
}

/**
 * Whose registry credentials a pull uses, and how to read them. A scope
 * names the credentials: pods of one scope pull with the same ones.
 */
export interface PullCredentials {
  /** `''` for a pod without imagePullSecrets (see `pullScope` in registry-auth.ts). */
  scope: string;
  /** Read when a pull starts, never kept. */
  resolve: () => Promise<RegistryAuth | undefined>;
}

/**
 * Image pulls, which may take minutes, run in the background of whichever
 * call found an image missing; the calls that follow see them in flight
 * (waiting reason ContainerCreating), failed (ErrImagePull, then
 * ImagePullBackOff until the kubelet's back-off lets the next pull start) or
 * done. What is pulled lives on the engine; what is in flight and the
 * failures are per process, as the kubelet keeps its image back-off in
 * memory: a new process pulls again at once, which costs one early retry.
 *
 * A pull, its failures and back-off, and the time it ended belong to one
 * image and one credentials scope, as the kubelet pulls with each pod's own
 * credentials: a pod with credentials never waits out the back-off of a
 * pull that lacked them, and under `Always` a pod never runs an image that
 * was pulled with credentials other than its own. An image on the engine is
 * used by any pod under `IfNotPresent` and `Never`, as the kubelet does by
 * default.
 */
export class ImagePuller {
  /** Images known to be on the engine (positive answers only: a missing image is asked again). */
  private readonly present = new Set<string>();
  /** By {@link pullKey}. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** By {@link pullKey}. */
  private readonly failures = new Map<string, { count: number; at: number; message: string }>();
  /** When a pull of an image ended, by image, then credentials scope. */
  private readonly pulledAt = new Map<string, Map<string, number>>();

  constructor(
    private readonly options: {
      docker: Docker;
      clock: Clock;
      log: Logger;
      /** The longest a pull may run before it counts as failed. */
      timeoutMs: number;
    },
  ) {}

  /**
   * Where `image` stands for a container instance due since `dueSince`,
   * starting a pull when the policy asks for one and none is in flight or
   * backing off. `Always` wants a pull that ended after the instance became
   * due; `IfNotPresent` an image on the engine; `Never` never pulls.
   */
  async view(
    image: string,
    policy: PullPolicy,
    dueSince: number,
    credentials: PullCredentials,
    signal?: AbortSignal,
  ): Promise<ImageView> {
    if (policy === 'Always') {
      if ((this.pulledAt.get(image)?.get(credentials.scope) ?? -1) >= dueSince) return { kind: 'ready' };
    } else if (await this.isPresent(image, signal)) {
      return { kind: 'ready' };
    } else if (policy === 'Never') {
      return { kind: 'never' };
    }
    const key = pullKey(image, credentials.scope);
    if (this.inFlight.has(key)) return { kind: 'pulling' };
    const failure = this.failures.get(key);
    const now = this.options.clock.now();
    if (failure) {
      const retryAt = failure.at + pullDelayMs(failure.count);
      if (now < retryAt) return { kind: 'failed', message: failure.message, failedAt: failure.at, retryAt };
    }
    this.start(image, credentials);
    return { kind: 'pulling' };
  }

  /**
   * Makes sure `image` is on the engine, pulling it in the foreground when
   * it is not: for the infra image alone, which is small, pulled once per
   * engine, and needed before a pod can exist at all.
   */
  async ensure(image: string, signal?: AbortSignal): Promise<void> {
    if (await this.isPresent(image, signal)) return;
    await this.pull(image, undefined, signal);
    this.present.add(image);
  }

  /** The engine said the image is missing (a create failed): ask it again next time. */
  forget(image: string): void {
    this.present.delete(image);
    this.pulledAt.delete(image);
  }

  /** Resolves when every pull in flight ended: for tests and orderly shutdowns. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
  }

  private async isPresent(image: string, signal?: AbortSignal): Promise<boolean> {
    if (this.present.has(image)) return true;
    try {
      signal?.throwIfAborted();
      await this.options.docker.getImage(image).inspect();
      this.present.add(image);
      return true;
    } catch (err) {
      if (isEngineNotFound(err)) return false;
      throw err;
    }
  }

  private start(image: string, credentials: PullCredentials): void {
    const { clock, log } = this.options;
    const { scope } = credentials;
    const key = pullKey(image, scope);
    const run = (async () => this.pull(image, await credentials.resolve()))().then(
      () => {
        this.failures.delete(key);
        this.present.add(image);
        const byScope = this.pulledAt.get(image) ?? new Map<string, number>();
        this.pulledAt.set(image, byScope.set(scope, clock.now()));
        log.info({ image, scope }, 'image pulled');
      },
      (err: unknown) => {
        const message = `failed to pull image "${image}": ${engineErrorMessage(err)}`;
        const count = (this.failures.get(key)?.count ?? 0) + 1;
        this.failures.set(key, { count, at: clock.now(), message });
        log.warn({ image, scope, failures: count, reason: engineErrorMessage(err) }, 'image pull failed');
      },
    );
    const tracked = run.finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, tracked);
  }

  private async pull(
    image: string,
    authconfig: RegistryAuth | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    const { docker, timeoutMs } = this.options;
    const timeout = AbortSignal.timeout(timeoutMs);
    const abortSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const stream = await docker.pull(image, { ...(authconfig ? { authconfig } : {}), abortSignal });
    const output = await new Promise<unknown[]>((resolve, reject) => {
      docker.modem.followProgress(stream, (err: Error | null, out: unknown[]) =>
        err ? reject(err) : resolve(out),
      );
    });
    // The engine reports a failed pull inside the progress stream, not as an HTTP error.
    const failed = output.find(
      (line): line is { error: string } =>
        typeof line === 'object' && line !== null && 'error' in line && typeof line.error === 'string',
    );
    if (failed) throw new Error(failed.error);
  }
}

/** One image pulled with one scope's credentials. */
function pullKey(image: string, scope: string): string {
  return `${scope}\u0000${image}`;
}
