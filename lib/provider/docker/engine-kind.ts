/**
 * Which engine answers the Docker API. They differ in how a container that
 * joins another's network gets its hostname: Docker Engine copies the
 * hostname of the container it joins (and refuses a UTS namespace of another
 * container), Podman gives it a UTS namespace of its own, named after its
 * id, unless it is told to join the other's (see instanceConfig).
 */
export type EngineKind = 'docker' | 'podman';

/** What of the engine's `/version` answer tells the engines apart. */
export interface EngineVersion {
  Components?: ReadonlyArray<{ Name: string }>;
}

/** The kind of the engine whose `/version` answered `version` (Podman names its component "Podman Engine"). */
export function engineKindOf(version: EngineVersion): EngineKind {
  return version.Components?.some((c) => /podman/i.test(c.Name)) ? 'podman' : 'docker';
}

/** The engine's kind, asked on first use and kept; a failed ask is made again on the next use. */
export function engineKindOnce(docker: { version(): Promise<EngineVersion> }): () => Promise<EngineKind> {
  let kind: Promise<EngineKind> | undefined;
  return () => {
    kind ??= docker.version().then(engineKindOf, (err: unknown) => {
      kind = undefined;
      throw err;
    });
    return kind;
  };
}
