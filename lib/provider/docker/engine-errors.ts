/**
 * Engine errors, classified by predicate. dockerode rejects with an Error
 * carrying the HTTP `statusCode` and the engine's message (`json.message`).
 * Docker and Podman differ in places: a duplicate container name is 409 on
 * Docker and 500 "...already in use" on Podman 4; killing a stopped
 * container is 409 on Docker and 500 "container state improper" on Podman;
 * a container removed while Podman reads it is 500 "container not known",
 * "...does not exist in database: no such container" or "container has
 * already been removed";
 * removing a container others joined is 500 "dependent containers" on
 * Podman. Those are told apart by the engine's message, here and only here.
 */

function statusCode(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null || !('statusCode' in err)) return undefined;
  return typeof err.statusCode === 'number' ? err.statusCode : undefined;
}

function engineMessage(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const json = 'json' in err ? err.json : undefined;
  if (typeof json === 'object' && json !== null && 'message' in json && typeof json.message === 'string')
    return json.message;
  return err instanceof Error ? err.message : String(err);
}

/** No such container, image, volume or network (also when it vanished while the engine read it). */
export function isEngineNotFound(err: unknown): boolean {
  const code = statusCode(err);
  return (
    code === 404 ||
    (code === 500 && /container not known|no such container|already been removed/i.test(engineMessage(err)))
  );
}

/**
 * The id of a container whose record Podman still holds while its storage is
 * gone ("getting container from store \"<id>\": container not known"):
 * briefly while a removal runs, for good when a create raced a removal. Such
 * a record fails every list and inspection, of every client, until it is
 * removed.
 */
export function storagelessContainerId(err: unknown): string | undefined {
  if (statusCode(err) !== 500) return undefined;
  return /container from store "([0-9a-f]{64})": container not known/i.exec(engineMessage(err))?.[1];
}

/** The image a container is created from is not on the engine. */
export function isImageMissing(err: unknown): boolean {
  return (
    isEngineNotFound(err) &&
    /image/i.test(engineMessage(err)) &&
    !/container to share/i.test(engineMessage(err))
  );
}

/** Removing a container that others still join (Podman): remove them first. */
export function hasDependents(err: unknown): boolean {
  return statusCode(err) === 500 && /dependent containers|is a dependency of/i.test(engineMessage(err));
}

/** The containers Podman names as joining the one it refused to remove ("...must be removed before it: <id>, <id>"). */
export function dependentContainerIds(err: unknown): string[] {
  if (!hasDependents(err)) return [];
  const after = engineMessage(err).split(/removed before it:/i)[1] ?? '';
  return after.match(/\b[0-9a-f]{64}\b/gi) ?? [];
}

/** A container or volume of that name exists already. */
export function isNameConflict(err: unknown): boolean {
  const code = statusCode(err);
  return code === 409 || (code === 500 && /already in use|already exists/i.test(engineMessage(err)));
}

/** Starting a running container, or stopping a stopped one. */
export function isNotModified(err: unknown): boolean {
  return statusCode(err) === 304;
}

/**
 * Starting a container while another client starts it (Podman 4.3: 500
 * "must be in Created or Stopped state to be started: container state
 * improper" while the other start runs; Docker serialises starts and
 * answers 304 once the first is done).
 */
export function isStartUnderWay(err: unknown): boolean {
  return statusCode(err) === 500 && /to be started: container state improper/i.test(engineMessage(err));
}

/** Signalling a container that is not running. */
export function isNotRunning(err: unknown): boolean {
  const code = statusCode(err);
  return (
    (code === 409 && /not running/i.test(engineMessage(err))) ||
    (code === 500 && /state improper|not running/i.test(engineMessage(err)))
  );
}

/** The engine's own words, without dockerode's `(HTTP code N) ...` prefix. */
export function engineErrorMessage(err: unknown): string {
  return engineMessage(err).trim();
}
