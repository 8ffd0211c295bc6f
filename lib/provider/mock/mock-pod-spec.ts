import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerArgv } from '../container-command.ts';
import { probeProblems } from '../container-probes.ts';
import { ProviderUnsupportedError } from '../provider.ts';
import { mockRun } from './mock-command.ts';
import type { MockContainer, MockPodState } from './mock-pod-status.ts';
import { mockProbes } from './mock-probes.ts';

/** What the mock takes of a pod spec: its identity, binding, and what each container does. */

/** Namespace, name and uid of a pod, as a delete needs them. */
export function podIdentity(pod: V1Pod): { namespace: string; name: string; uid: string } {
  const { namespace, name, uid } = pod.metadata ?? {};
  if (namespace && name && uid) return { namespace, name, uid };
  const missing = [
    ...(namespace ? [] : ['metadata.namespace']),
    ...(name ? [] : ['metadata.name']),
    ...(uid ? [] : ['metadata.uid']),
  ];
  throw new Error(`mock provider: pod ${namespace ?? '?'}/${name ?? '?'} lacks ${missing.join(', ')}`);
}

/**
 * The identity, binding and containers of a pod from the API server, with
 * what each container's command does in its resolved env.
 * @throws MockCommandError naming a script the mock cannot read.
 */
export function podState(pod: V1Pod): Omit<MockPodState, 'plan' | 'createdAt'> {
  const identity = podIdentity(pod);
  const node = pod.spec?.nodeName;
  if (!node) throw new Error(`mock provider: pod ${identity.namespace}/${identity.name} lacks spec.nodeName`);
  const problems = [
    ...(pod.spec?.initContainers ?? []).flatMap((c) =>
      probeProblems(`spec.initContainers[${c.name}]`, 'initContainers', c),
    ),
    ...(pod.spec?.containers ?? []).flatMap((c) =>
      probeProblems(`spec.containers[${c.name}]`, 'containers', c),
    ),
  ];
  if (problems.length > 0) throw new ProviderUnsupportedError(problems, 'mock');
  const annotations = pod.metadata?.annotations ?? {};
  const inits = (pod.spec?.initContainers ?? []).map((c) => mockContainer(c, annotations));
  return {
    ...identity,
    node,
    restartPolicy: pod.spec?.restartPolicy ?? 'Always',
    containers: (pod.spec?.containers ?? []).map((c) => mockContainer(c, annotations)),
    ...(inits.length > 0 ? { initContainers: inits } : {}),
  };
}

function mockContainer(c: V1Container, annotations: Readonly<Record<string, string>>): MockContainer {
  const env = Object.fromEntries(
    (c.env ?? []).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])),
  );
  const termination = c.terminationMessagePath
    ? {
        path: c.terminationMessagePath,
        fallbackToLogs: c.terminationMessagePolicy === 'FallbackToLogsOnError',
      }
    : undefined;
  const { command, args } = containerArgv(c);
  const run = mockRun(command, args, env, termination);
  const probes = mockProbes(c, annotations);
  return { name: c.name, image: c.image ?? '', ...(run ? { run } : {}), ...(probes ? { probes } : {}) };
}
