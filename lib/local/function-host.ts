import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Context } from 'aws-lambda';
import type { PutEventsEntry, PutEventsResponse } from '../events/publisher.ts';
import type { TickQueue } from '../tick/tick-queue.ts';
import type { DeploymentFunction, FunctionKubeconfigs } from './deployment-handlers.ts';
import type { HostMessage, ParentMessage, TickQueueCall } from './function-host-protocol.ts';
import { invocationSignal } from './invocation-scope.ts';
import type { LambdaHandler } from './lambda-function.ts';
import { reviveError, serializeError } from './serialized-error.ts';

const ENTRY = fileURLToPath(new URL('./function-host-entry.ts', import.meta.url));

export interface FunctionHostOptions {
  /** The functions' environment (their configuration), sent to every new host process. */
  env: Record<string, string | undefined>;
  /** Each function's own kubeconfig, instead of `env`'s SVK_KUBECONFIG (deployment-handlers.ts). */
  kubeconfigs?: FunctionKubeconfigs;
  /** Where pod-watch's PutEvents calls go (the deployment's event bus, which outlives the sandboxes). */
  putEvents: (entries: PutEventsEntry[]) => Promise<PutEventsResponse>;
  /** The tick chain's queue (tick cadence), which outlives the sandboxes as SQS does. */
  tickQueue?: TickQueue;
  /**
   * What each host process is forked with besides the deployment's own: more
   * node arguments (a test's `--import`, say, of a module that changes the
   * sandboxes' environment) and environment variables on top of this
   * process's. Default none.
   */
  process?: HostProcessOptions;
}

/** Node arguments and environment variables a {@link FunctionHost} adds to each process it forks. */
export interface HostProcessOptions {
  execArgv?: readonly string[];
  env?: Readonly<Record<string, string>>;
}

interface HostProcess {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<void>;
  pending: Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>;
}

/**
 * The sandboxes of a deployment's functions in one separate process, so that
 * a test (or a benchmark) can SIGKILL every function at once, mid-invocation,
 * as a Lambda outage or a host failure would: {@link kill} ends the process,
 * every invocation in flight fails as Lambda reports a dead runtime
 * (`Runtime.ExitError`, which EventBridge retries), and the next invocation
 * forks a fresh process: a cold start of every function.
 *
 * The local runtime, its schedules, queues and the event bus stay in the
 * calling process, as EventBridge and Lambda's queues stay up when sandboxes
 * die. {@link handler} gives the runtime a stand-in handler per function
 * that forwards the invocation (event, deadline, request id) to the host and
 * its result back; a crash or timeout the runtime injects aborts the
 * invocation's signal in the host.
 */
export class FunctionHost {
  #process: HostProcess | undefined;
  #nextId = 1;
  #coldStarts = 0;
  #stopped = false;

  constructor(private readonly options: FunctionHostOptions) {}

  /** How many host processes were started: 1 plus one per restart after {@link kill}. */
  get coldStarts(): number {
    return this.#coldStarts;
  }

  /** The host process's pid, when one runs. */
  get pid(): number | undefined {
    return this.#process?.child.pid;
  }

  /** The handler the local runtime registers for `name`: runs each invocation in the host. */
  handler(name: DeploymentFunction): LambdaHandler {
    return (event: never, context: Context) => this.#invoke(name, event, context);
  }

  /**
   * SIGKILLs the host process now and waits until it is gone. Invocations in
   * flight fail; later invocations start a new process.
   */
  async kill(): Promise<void> {
    const current = this.#process;
    if (!current) return;
    this.#process = undefined;
    current.child.kill('SIGKILL');
    await current.exited;
  }

  /** Kills the host for good: later invocations fail at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.kill();
  }

  async #invoke(name: DeploymentFunction, event: unknown, context: Context): Promise<unknown> {
    if (this.#stopped) throw new Error(`function host stopped: ${name} not invoked`);
    const host = this.#start();
    await host.ready;
    const id = this.#nextId++;
    const signal = invocationSignal(context);
    const result = new Promise<unknown>((resolve, reject) => host.pending.set(id, { resolve, reject }));
    const onAbort = () => {
      const reason = signal?.reason instanceof Error ? signal.reason.message : 'aborted';
      this.#send(host, { type: 'abort', id, reason });
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#send(host, {
      type: 'invoke',
      id,
      name,
      event,
      context: {
        functionName: context.functionName,
        requestId: context.awsRequestId,
        timeoutMs: context.getRemainingTimeInMillis(),
        deadlineMs: Date.now() + context.getRemainingTimeInMillis(),
        memoryMb: Number(context.memoryLimitInMB),
      },
    });
    try {
      return await result;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  #send(host: HostProcess, message: ParentMessage): void {
    if (host.child.connected) host.child.send(message);
  }

  /** The running host process, forking one when there is none. */
  #start(): HostProcess {
    if (this.#process) return this.#process;
    const extra = this.options.process;
    const child = fork(ENTRY, [], {
      execArgv: ['--import', import.meta.resolve('tsx'), ...(extra?.execArgv ?? [])],
      ...(extra?.env ? { env: { ...process.env, ...extra.env } } : {}),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.#coldStarts++;
    const pending: HostProcess['pending'] = new Map();
    let markReady = () => {};
    let failReady: (error: Error) => void = () => {};
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    // A host killed before it was ready fails its waiting invocations through `ready`.
    ready.catch(() => {});
    const exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        // Lambda reports a runtime that died mid-invocation as Runtime.ExitError.
        const error = new Error(
          `Runtime exited ${signal ? `with signal: ${signal}` : `with error: exit status ${code}`}`,
        );
        error.name = 'Runtime.ExitError';
        failReady(error);
        for (const p of pending.values()) p.reject(error);
        pending.clear();
        if (this.#process?.child === child) this.#process = undefined;
        resolve();
      });
    });
    const host: HostProcess = { child, ready, exited, pending };
    child.on('message', (message: HostMessage) => this.#onMessage(host, message, markReady));
    child.on('error', (error) => failReady(error));
    child.send({
      type: 'init',
      env: this.options.env,
      kubeconfigs: this.options.kubeconfigs ?? {},
      tickQueue: this.options.tickQueue !== undefined,
    } satisfies ParentMessage);
    this.#process = host;
    return host;
  }

  #onMessage(host: HostProcess, message: HostMessage, markReady: () => void): void {
    if (message.type === 'ready') {
      markReady();
    } else if (message.type === 'result') {
      const p = host.pending.get(message.id);
      host.pending.delete(message.id);
      if (message.status === 'ok') p?.resolve(message.result);
      else p?.reject(reviveError(message.error));
    } else if (message.type === 'tick-queue') {
      this.#tickQueueCall(host, message.id, message.call);
    } else {
      this.options.putEvents(message.entries).then(
        (response) => this.#send(host, { type: 'put-events-result', id: message.id, response }),
        (error: unknown) =>
          this.#send(host, { type: 'put-events-result', id: message.id, error: serializeError(error) }),
      );
    }
  }

  #tickQueueCall(host: HostProcess, id: number, call: TickQueueCall): void {
    const queue = this.options.tickQueue;
    const answer: Promise<boolean | undefined> = !queue
      ? Promise.reject(new Error('function host: this deployment has no tick queue'))
      : call.op === 'send'
        ? queue.send({ slot: call.slot, sender: call.sender, group: call.group }).then(() => undefined)
        : queue.isEmpty();
    answer.then(
      (empty) =>
        this.#send(host, { type: 'tick-queue-result', id, ...(empty === undefined ? {} : { empty }) }),
      (error: unknown) => this.#send(host, { type: 'tick-queue-result', id, error: serializeError(error) }),
    );
  }
}
