/**
 * Which part of a tick (heartbeat, pod-watch, pod-status, reconcile) the
 * current async call chain belongs to, for the benchmarks that count
 * requests by part: all parts of a tick run in one invocation, so the local
 * runtime's invocation scope cannot tell them apart.
 *
 * `attributeTickParts()` wraps the work that `TickParts` hands to the tick
 * (lib/tick/tick-parts.ts) so that each part runs inside an
 * AsyncLocalStorage scope of its name; a request counter's `classify`
 * (which runs synchronously where the request is created, see
 * `HttpRequestCounter`) then asks `currentTickPart()`. The code under test
 * is not changed: the wrapper only calls the part's own `run`. Works for the
 * in-process sandboxes of the local runtime (LocalDeployment's default),
 * where the benchmark and the functions share this module graph.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { TickPartName } from '../lib/config/env-variables.ts';
import { type PartWork, TickParts } from '../lib/tick/tick-parts.ts';

const scope = new AsyncLocalStorage<TickPartName>();
let installed = false;

/** The tick part whose work is running in this async call chain, or undefined outside any. */
export function currentTickPart(): TickPartName | undefined {
  return scope.getStore();
}

function scoped(part: PartWork): PartWork {
  const run = part.run.bind(part);
  return { name: part.name, run: (context) => scope.run(part.name, () => run(context)) };
}

/** Makes every tick part run in its own scope (see the module comment). Idempotent. */
export function attributeTickParts(): void {
  if (installed) return;
  installed = true;
  const proto = TickParts.prototype;
  const heartbeat = proto.heartbeat;
  const work = proto.work;
  proto.heartbeat = function (this: TickParts, ...args: Parameters<TickParts['heartbeat']>) {
    const part = heartbeat.apply(this, args);
    return part && scoped(part);
  };
  proto.work = function (this: TickParts, ...args: Parameters<TickParts['work']>) {
    return work.apply(this, args).map(scoped);
  };
}
