/**
 * Whether the engine's host enforces SELinux labels, as its `/info` answer
 * says (`SecurityOptions` holds `name=selinux` when the engine runs with
 * SELinux support on an SELinux host). Where it does, a pod's
 * `seLinuxOptions` become the containers' label options; where it does not,
 * they are accepted and ignored, as the kubelet does on a host without
 * SELinux.
 */

/** What of the engine's `/info` answer tells it. */
export interface EngineInfo {
  SecurityOptions?: readonly string[] | null;
}

export function engineHasSelinux(info: EngineInfo): boolean {
  return (info.SecurityOptions ?? []).some((option) => option.split(',').includes('name=selinux'));
}

/** Asked on first use and kept; a failed ask is made again on the next use. */
export function engineSelinuxOnce(docker: { info(): Promise<EngineInfo> }): () => Promise<boolean> {
  let selinux: Promise<boolean> | undefined;
  return () => {
    selinux ??= docker.info().then(engineHasSelinux, (err: unknown) => {
      selinux = undefined;
      throw err;
    });
    return selinux;
  };
}
