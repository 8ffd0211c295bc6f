import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import { errorMessage } from '../../util/error-message.ts';
import {
  type IssuedToken,
  jwtLifetime,
  type TokenRequester,
  type TokenSource,
  tokenNeedsRefresh,
} from '../projected-token.ts';

export type { IssuedToken, TokenRequester, TokenRequestSpec } from '../projected-token.ts';

import { DATA_DIR_NAME } from './atomic-layout.ts';
import { heldVolumePath } from './container-config.ts';
import { pathStat, readContainerFile } from './engine-archive.ts';
import type { PodPlan } from './pod-plan.ts';

/**
 * The tokens of projected serviceAccountToken sources (volume-delivery.ts
 * writes them). They come from the TokenRequest API (one
 * `create` of `serviceaccounts/token` per token), bound to the pod (its
 * name and uid), and are renewed by the kubelet's rule (projected-token.ts:
 * past 80 % of their lifetime or 24 h, less a jitter of up to 9 s), checked
 * at each minute's refresh; a new token is written through the same swap
 * as any other change. This process keeps the tokens it holds in memory
 * (bounded, and dropped once expired), as the kubelet's token manager does;
 * after a cold start a volume's token is dated by reading it back from the
 * volume (one archive GET per token, its JWT's `iat` and `exp`), so a new
 * process asks for no token that is not due. A refresh that fails keeps the
 * token written while it is valid, with a log line. A token is never logged
 * nor stored anywhere but in the volume (tmpfs) and this memory.
 */

export interface VolumeTokensDeps {
  docker: Docker;
  sources: { serviceAccountToken?: TokenRequester };
  clock: Clock;
  log: Logger;
  /** The refresh's jitter draw in [0, 1); Math.random unless given. */
  random?: () => number;
}

/** Tokens held: one per pod this process serves a token source of. */
const MAX_HELD = 10_000;

export class VolumeTokens {
  /** The tokens held, by `<infra id>/<volume>/<path>`. */
  readonly #held = new Map<string, IssuedToken>();

  constructor(private readonly deps: VolumeTokensDeps) {}

  /** Lets go of the tokens of an infra container's volumes (it is not running: its tmpfs lost them). */
  forget(infraId: string): void {
    for (const key of this.#held.keys()) if (key.startsWith(`${infraId}/`)) this.#held.delete(key);
  }

  /**
   * The token of a projected source: the one held (in memory, else read back from the volume) while
   * the refresh rule keeps it, else a new one; the one held when a new one cannot be had and it is
   * still valid (the kubelet's GetServiceAccountToken).
   */
  async token(
    plan: PodPlan,
    infraId: string,
    volume: string,
    source: TokenSource,
    signal?: AbortSignal,
  ): Promise<IssuedToken | { error: string }> {
    const { clock, sources, log } = this.deps;
    const key = `${infraId}/${volume}/${source.path}`;
    const held = this.#held.get(key) ?? (await this.#writtenToken(infraId, volume, source.path, signal));
    const now = clock.now();
    if (held && !tokenNeedsRefresh(held, now, (this.deps.random ?? Math.random)())) {
      this.#hold(key, held, now);
      return held;
    }
    try {
      if (!sources.serviceAccountToken) throw new Error('no API server to ask for tokens');
      const issued = await sources.serviceAccountToken(plan.namespace, source.serviceAccount, {
        ...(source.audience ? { audience: source.audience } : {}),
        expirationSeconds: source.expirationSeconds,
        pod: { name: plan.name, uid: plan.uid },
      });
      this.#hold(key, issued, now);
      log.info(
        {
          pod: `${plan.namespace}/${plan.name}`,
          uid: plan.uid,
          volume,
          path: source.path,
          expiresAt: new Date(issued.expiresAt).toISOString(),
        },
        'docker provider: service account token requested',
      );
      return issued;
    } catch (err) {
      if (held && now < held.expiresAt) {
        log.warn(
          { pod: `${plan.namespace}/${plan.name}`, uid: plan.uid, volume, path: source.path, err },
          'docker provider: could not renew a service account token: the current one is kept until it expires',
        );
        return held;
      }
      return {
        error: `failed to fetch token: ${errorMessage(err)}`,
      };
    }
  }

  /** The token a volume holds at `path`, dated by its claims; undefined when there is none or it has no dates. */
  async #writtenToken(
    infraId: string,
    volume: string,
    path: string,
    signal?: AbortSignal,
  ): Promise<IssuedToken | undefined> {
    const dir = heldVolumePath(volume);
    const target = (await pathStat(this.deps.docker, infraId, `${dir}/${DATA_DIR_NAME}`, signal))?.linkTarget;
    const timestamped = target?.split('/').pop();
    if (!timestamped) return undefined;
    const token = await readContainerFile(this.deps.docker, infraId, `${dir}/${timestamped}/${path}`, signal);
    const lifetime = token ? jwtLifetime(token.toString('utf8')) : undefined;
    return token && lifetime ? { ...lifetime, token } : undefined;
  }

  /** Keeps `token` under `key`; tokens expired by `now` are let go, as the kubelet's cleanup does. */
  #hold(key: string, token: IssuedToken, now: number): void {
    this.#held.delete(key);
    for (const [k, t] of this.#held) if (t.expiresAt < now) this.#held.delete(k);
    this.#held.set(key, token);
    if (this.#held.size > MAX_HELD) this.#held.delete(this.#held.keys().next().value ?? '');
  }
}
