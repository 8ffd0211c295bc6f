import type Docker from 'dockerode';
import { createEmptyFile, readContainerFile } from './engine-archive.ts';
import { isEngineNotFound } from './engine-errors.ts';
import type { EngineKind } from './engine-kind.ts';
import { engineLogLines } from './engine-log.ts';
import { TERMINATION_DIR, TERMINATION_VOLUME, volumeName } from './names.ts';
import type { Instance } from './observed-pod.ts';
import type { ContainerPlan, PodPlan } from './pod-plan.ts';
import { volumeMountpoint } from './volume-delivery.ts';

/**
 * Termination messages, as the kubelet reads them (kuberuntime's
 * getTerminationMessage and readLastStringFromContainerLogs): the file at a
 * container's terminationMessagePath, at most its last 4 KiB, and with
 * FallbackToLogsOnError, when that file is empty and the container failed,
 * the last 80 lines of its log, at most their last 2 KiB; the pod's status
 * then holds at most 12 KiB of them in all (the status manager's
 * normalizeStatus cuts each to 12 KiB over the number of containers).
 *
 * The file must outlive the container, and through the engine's API only:
 * the kubelet bind-mounts a file of its own at the path; here the file is
 * one per instance in the pod's `termination_messages` volume (a name no
 * Kubernetes volume can have), created empty (mode 0666: any user may
 * write it) through an archive PUT into the infra container, which mounts
 * the volume, and bind-mounted at the path from the volume's directory on
 * the engine host. Read back, after the instance exited, by an archive GET
 * from the infra container: Podman 4.3 cannot copy from a stopped container
 * through a file bind mount.
 */

export const MAX_MESSAGE_BYTES = 4 * 1024;
export const MAX_LOG_LINES = 80;
export const MAX_LOG_BYTES = 2 * 1024;
export const MAX_POD_MESSAGE_BYTES = 12 * 1024;

/** Whether any container of the plan has a termination message path. */
export function hasTerminationMessages(
  containers: readonly Pick<ContainerPlan, 'terminationMessage'>[],
): boolean {
  return containers.some((c) => c.terminationMessage !== undefined);
}

function fileName(container: string, attempt: number): string {
  return `${container}_${attempt}`;
}

/**
 * Creates the instance's empty message file and resolves with the bind that
 * mounts it at the container's path, or undefined when the pod has no
 * termination volume (a pod created by an earlier release).
 */
export async function terminationMessageBind(
  docker: Docker,
  plan: PodPlan,
  container: ContainerPlan,
  attempt: number,
  infraId: string,
  mountpoints: Map<string, string>,
): Promise<string | undefined> {
  const path = container.terminationMessage?.path;
  if (!path || !plan.volumes.some((v) => v.name === TERMINATION_VOLUME)) return undefined;
  const mountpoint = await volumeMountpoint(docker, volumeName(plan.uid, TERMINATION_VOLUME), mountpoints);
  const file = fileName(container.name, attempt);
  await createEmptyFile(docker, infraId, TERMINATION_DIR, file);
  return `${mountpoint}/${file}:${path}`;
}

/** Reads the termination messages of exited instances, each once per process (an exited instance never changes). */
export class TerminationMessages {
  readonly #read = new Map<string, string>();

  constructor(
    private readonly docker: Docker,
    /** Docker Engine or Podman, whose log tails differ. */
    private readonly engineKind: () => Promise<EngineKind>,
  ) {}

  /** The messages of the exited instances of `containers`, by instance id, as their statuses show them. */
  async of(
    plan: PodPlan,
    infraId: string,
    instances: readonly Instance[],
    signal?: AbortSignal,
  ): Promise<Map<string, string>> {
    const messages = new Map<string, string>();
    const containers = [...plan.initContainers, ...plan.containers];
    for (const instance of instances) {
      if (instance.state !== 'exited' || instance.startError) continue;
      const container = containers.find((c) => c.name === instance.container);
      if (!container?.terminationMessage) continue;
      let message = this.#read.get(instance.id);
      if (message === undefined) {
        message = await this.#message(plan, container, infraId, instance, signal);
        this.#read.set(instance.id, message);
        if (this.#read.size > 10_000) this.#read.delete(this.#read.keys().next().value ?? '');
      }
      if (message) messages.set(instance.id, message);
    }
    return capPerPod(messages, containers.length);
  }

  async #message(
    plan: PodPlan,
    container: ContainerPlan,
    infraId: string,
    instance: Instance,
    signal?: AbortSignal,
  ): Promise<string> {
    const file = plan.volumes.some((v) => v.name === TERMINATION_VOLUME)
      ? await this.#file(infraId, `${TERMINATION_DIR}/${fileName(container.name, instance.attempt)}`, signal)
      : '';
    if (file || !container.terminationMessage?.fallbackToLogs || (instance.exitCode ?? 0) === 0) return file;
    return this.#logTail(instance.id, container.tty, signal);
  }

  async #file(infraId: string, path: string, signal?: AbortSignal): Promise<string> {
    const content = await readContainerFile(this.docker, infraId, path, signal);
    return content ? lastBytes(content, MAX_MESSAGE_BYTES) : '';
  }

  /**
   * The log's last 80 lines, at most their last 2 KiB, as the kubelet writes them (each ends in a newline).
   * Podman 4.3's `tail` merges a last line without a newline into the line before it, so from Podman the
   * whole log is read, keeping only its last lines as they stream by.
   */
  async #logTail(id: string, tty: boolean, signal?: AbortSignal): Promise<string> {
    const podman = (await this.engineKind()) === 'podman';
    try {
      const source = await this.docker.getContainer(id).logs({
        stdout: true,
        stderr: true,
        follow: true,
        timestamps: true,
        ...(podman ? {} : { tail: MAX_LOG_LINES }),
        ...(signal ? { abortSignal: signal } : {}),
      });
      const lines: Buffer[] = [];
      for await (const line of engineLogLines(chunks(source), tty)) {
        lines.push(line.partial ? line.text : Buffer.concat([line.text, NEWLINE]));
        if (lines.length > MAX_LOG_LINES) lines.shift();
      }
      return lastBytes(Buffer.concat(lines), MAX_LOG_BYTES);
    } catch (err) {
      if (isEngineNotFound(err)) return '';
      throw err;
    }
  }
}

/** Each message cut to 12 KiB over the number of containers, as the status manager cuts them. */
function capPerPod(messages: Map<string, string>, containers: number): Map<string, string> {
  const perContainer = Math.floor(MAX_POD_MESSAGE_BYTES / Math.max(1, containers));
  for (const [id, message] of messages) {
    const bytes = Buffer.from(message);
    if (bytes.length > perContainer) messages.set(id, bytes.subarray(0, perContainer).toString('utf8'));
  }
  return messages;
}

function lastBytes(content: Buffer, max: number): string {
  return (content.length > max ? content.subarray(content.length - max) : content).toString('utf8');
}

const NEWLINE = Buffer.from('\n');

/** The log stream of an exited container: it ends with the log. */
async function* chunks(source: NodeJS.ReadableStream): AsyncGenerator<Buffer> {
  for await (const piece of source) yield typeof piece === 'string' ? Buffer.from(piece) : piece;
}
