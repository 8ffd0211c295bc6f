import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { V1Secret } from '@kubernetes/client-node';
import { BUSYBOX_TAGS } from '../../lib/local/busybox-image.ts';
import { podmanEnv, podmanLayout } from '../../lib/local/podman-config.ts';
import { testEngine } from './docker.ts';
import { type TestEnv, testEnv } from './env.ts';

const execFileAsync = promisify(execFile);

/**
 * Copies the locally imported busybox image into the run's registry (which
 * wants its credentials for every read and write) as `<address>/<repository>`,
 * and returns that reference. The engine itself gets no tag of that name:
 * the image is in the registry only, until something pulls it.
 */
export async function pushToTestRegistry(repository: string, env: TestEnv = testEnv()): Promise<string> {
  const [source] = BUSYBOX_TAGS;
  if (!source) throw new Error('no local busybox image');
  const target = `${env.registry.address}/${repository}`;
  const { username, password } = env.registry;
  if (env.docker.engine === 'dockerd') {
    // Through the Engine API: a temporary tag, pushed with the credentials, then untagged.
    const docker = testEngine(env);
    const [repo, tag] = splitReference(target);
    await docker.getImage(source).tag({ repo, tag });
    try {
      const stream = await docker
        .getImage(target)
        .push({ authconfig: { username, password, serveraddress: env.registry.address } });
      await new Promise<void>((resolve, reject) => {
        docker.modem.followProgress(stream, (err: Error | null, output: Array<{ error?: string }>) => {
          const failed = err ?? output.find((o) => o.error)?.error;
          if (failed) reject(failed instanceof Error ? failed : new Error(`push ${target}: ${failed}`));
          else resolve();
        });
      });
    } finally {
      await docker.getImage(target).remove({ noprune: true });
    }
    return target;
  }
  // Through the run's Podman (its storage and registries.conf), which reaches the registry over plain HTTP.
  await execFileAsync(
    'podman',
    ['push', '--quiet', '--creds', `${username}:${password}`, source, `docker://${target}`],
    { env: podmanEnv(podmanLayout(env.docker.dir), process.env) },
  );
  return target;
}

/** `host:port/path:tag` as repository and tag (`latest` when it has none). */
function splitReference(reference: string): [string, string] {
  const slash = reference.lastIndexOf('/');
  const colon = reference.lastIndexOf(':');
  return colon > slash ? [reference.slice(0, colon), reference.slice(colon + 1)] : [reference, 'latest'];
}

/** A `kubernetes.io/dockerconfigjson` Secret, as `kubectl create secret docker-registry` writes it. */
export function dockerConfigSecret(
  namespace: string,
  name: string,
  registry: string,
  credentials: { username: string; password: string },
): V1Secret {
  const { username, password } = credentials;
  const auth = Buffer.from(`${username}:${password}`).toString('base64');
  const config = JSON.stringify({ auths: { [registry]: { username, password, auth } } });
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { namespace, name },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(config).toString('base64') },
  };
}
