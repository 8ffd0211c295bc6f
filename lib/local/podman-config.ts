import { createHash } from 'node:crypto';
import { join } from 'node:path';

/**
 * The configuration of one local Podman instance, all of it under one
 * directory: podman must see the same containers.conf and storage.conf from
 * its very first call on a storage directory, or its exit cleanup breaks
 * later (containers stay stopped, AutoRemove is ignored). So these files are
 * written before anything runs, and every podman process of the instance
 * (the service and each CLI call) gets them through the environment.
 */

/** Where one instance keeps its files. */
export interface PodmanLayout {
  dir: string;
  containersConf: string;
  storageConf: string;
  registriesConf: string;
  socket: string;
  storage: string;
  runroot: string;
  tmp: string;
  networks: string;
  eventsLog: string;
  serviceLog: string;
}

/**
 * Where runroots go: podman's CLI refuses a runroot longer than 50
 * characters ("the specified runroot is longer than 50 characters"; it holds
 * unix sockets), and the exit command conmon runs when a container exits,
 * `podman --runroot <runroot> container cleanup`, passes it as a flag. A
 * runroot inside a deep instance directory makes that command fail: the
 * container stays `stopped`, no `die` event is sent until a client asks,
 * and AutoRemove is ignored.
 */
const RUNROOTS = '/run/serverless-virtual-kubelet';

export function podmanLayout(dir: string): PodmanLayout {
  const key = createHash('sha256').update(dir).digest('hex').slice(0, 8);
  return {
    dir,
    containersConf: join(dir, 'containers.conf'),
    storageConf: join(dir, 'storage.conf'),
    registriesConf: join(dir, 'registries.conf'),
    socket: join(dir, 'podman.sock'),
    storage: join(dir, 'storage'),
    runroot: join(RUNROOTS, `runroot-${key}`),
    tmp: join(dir, 'tmp'),
    networks: join(dir, 'networks'),
    eventsLog: join(dir, 'events.log'),
    serviceLog: join(dir, 'service.log'),
  };
}

/**
 * Podman 4.3 rotates its event log at 1 MB by default, by rewriting the file
 * with its newer half: a `GET /events` read from a past time (`since`) then
 * ends, with the older events gone from any new read, and a live one
 * re-reads or skips the events around the rotation. An integration run
 * writes a few MB; tests count a pod's creates and removals on such a read.
 */
export const EVENTS_LOG_MAX_SIZE = '256m';

/**
 * containers.conf: runc with the cgroupfs manager (crun cannot set rlimits
 * nor handle hybrid cgroups on these machines); default ulimits within what
 * root may set here (the infra container fails with `error setting rlimit`
 * otherwise); networks, events and temporary files inside the instance's
 * directory; exit_command_delay short, or each exec session leaves a conmon
 * behind for 300 s; an event log that does not rotate within a run (see
 * EVENTS_LOG_MAX_SIZE).
 */
export function containersConf(layout: PodmanLayout): string {
  return [
    '[containers]',
    'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]',
    '',
    '[network]',
    `network_config_dir = ${quote(layout.networks)}`,
    '',
    '[engine]',
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    `events_logfile_path = ${quote(layout.eventsLog)}`,
    `events_logfile_max_size = ${quote(EVENTS_LOG_MAX_SIZE)}`,
    `tmp_dir = ${quote(layout.tmp)}`,
    'exit_command_delay = 5',
    '',
  ].join('\n');
}

export function storageConf(layout: PodmanLayout): string {
  return [
    '[storage]',
    'driver = "overlay"',
    `graphroot = ${quote(layout.storage)}`,
    `runroot = ${quote(layout.runroot)}`,
    '',
  ].join('\n');
}

/**
 * registries.conf: short names resolve to docker.io as Docker resolves them,
 * without prompting; `insecure` registries (`host:port`, such as a test
 * registry on 127.0.0.1) are reached over plain HTTP.
 */
export function registriesConf(insecure: readonly string[] = []): string {
  return [
    'unqualified-search-registries = ["docker.io"]',
    'short-name-mode = "permissive"',
    ...insecure.flatMap((location) => [
      '',
      '[[registry]]',
      `location = ${quote(location)}`,
      'insecure = true',
    ]),
    '',
  ].join('\n');
}

/** The environment every podman process of the instance runs with. */
export function podmanEnv(layout: PodmanLayout, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...base,
    CONTAINERS_CONF: layout.containersConf,
    CONTAINERS_STORAGE_CONF: layout.storageConf,
    CONTAINERS_REGISTRIES_CONF: layout.registriesConf,
  };
}

function quote(value: string): string {
  return JSON.stringify(value);
}
