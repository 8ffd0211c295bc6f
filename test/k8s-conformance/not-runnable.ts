/**
 * The [NodeConformance] specs whose image cannot exist on this machine: no
 * registry is reachable, and these images are neither in Debian nor
 * buildable from the kubernetes source tree. They are left out of the run
 * and reported apart from failures, by name, so that a figure never counts
 * them either way. (A spec that pulls from a registry that cannot exist
 * anywhere, `invalid.com`, is runnable: it fails its pull here as it would
 * everywhere.)
 */
interface NotRunnable {
  /** A piece of the spec's text that names it and no other. */
  spec: string;
  why: string;
}

const NGINX = 'its pod runs docker.io/library/nginx:1.14-alpine, which is not available here';

export const NOT_RUNNABLE: readonly NotRunnable[] = [
  { spec: 'Pods should be submitted and removed [NodeConformance]', why: NGINX },
  { spec: 'Pods should be updated [NodeConformance]', why: NGINX },
  { spec: 'Pods should allow activeDeadlineSeconds to be updated [NodeConformance]', why: NGINX },
  {
    spec: 'when running a container with a new image should be able to pull image [NodeConformance]',
    why: 'it pulls k8s.gcr.io/e2e-test-images/agnhost:2.21 from its registry (imagePullPolicy Always), which is not reachable here',
  },
  {
    spec: 'when running a container with a new image should not be able to pull from private registry without secret [NodeConformance]',
    why: 'it pulls from gcr.io/authenticated-image-pulling, which is not reachable here (a failed pull would pass it for the wrong reason)',
  },
  {
    spec: 'when running a container with a new image should be able to pull from private registry with secret [NodeConformance]',
    why: 'it pulls from gcr.io/authenticated-image-pulling, which is not reachable here',
  },
];

/** Why the spec cannot run here, or undefined when it can. */
export function notRunnableHere(name: string): string | undefined {
  return NOT_RUNNABLE.find((entry) => name.includes(entry.spec))?.why;
}

/** Entries that name no spec of `all`: the table no longer matches e2e.test. */
export function staleEntries(all: readonly string[]): string[] {
  return NOT_RUNNABLE.filter((entry) => !all.some((name) => name.includes(entry.spec))).map((e) => e.spec);
}
