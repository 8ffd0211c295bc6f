/**
 * The pod removals running in this process, by pod uid.
 *
 * Kept per process, not per provider instance: every function builds its own
 * provider, and functions that share a process (locally, every function's
 * sandbox runs in one host process: pod-sync's delete beside pod-status's
 * poll) act on the same pod at once. A second removal of a uid that is
 * being removed here joins the first instead of racing it round by round,
 * and a poller asks {@link removalOf} before it creates or starts a
 * container, so that it never brings back what a removal here is taking
 * apart. Removals in other processes are told apart by the deletion marker
 * on the engine (pod-removal.ts).
 */
const running = new Map<string, Promise<number>>();

/** The removal of `uid` running in this process, if any. */
export function removalOf(uid: string): Promise<number> | undefined {
  return running.get(uid);
}

/**
 * Runs `remove` for `uid` unless a removal of that uid runs already, in which
 * case it resolves (or rejects) with that one. The entry is dropped when the
 * removal settles, so a later removal of the uid runs afresh.
 */
export function removeOnce(uid: string, remove: () => Promise<number>): Promise<number> {
  const current = running.get(uid);
  if (current) return current;
  const started = remove().finally(() => running.delete(uid));
  running.set(uid, started);
  return started;
}
