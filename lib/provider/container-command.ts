import type { V1Container, V1EnvVar } from '@kubernetes/client-node';
import { expandEnv } from '../kube/env-expansion.ts';

/**
 * What a container runs: its `command` and `args` with `$(VAR)` expanded
 * from its environment, as the kubelet does when it builds the container's
 * config (pkg/kubelet/kuberuntime/kuberuntime_container.go calls
 * pkg/kubelet/container/helpers.go ExpandContainerCommandAndArgs with the
 * container's final env): `$(NAME)` becomes the variable's value, `$$` a
 * literal `$`, an unknown `$(NAME)` stays as written; the values are not
 * expanded again.
 *
 * The mapping is the container's `env` as the provider contract hands it
 * over (lib/provider/provider.ts): resolved, service-link variables
 * included, so the kubelet's mapping; a later variable of one name wins, as
 * in the kubelet's EnvVarsToMap. Every provider turns a container into what
 * runs through this function, each where it builds the process (the docker
 * provider's plan, the ECS container definition, the mock's model), so that
 * a provider that must know where a value came from (a Secret's value must
 * not land in an ECS task definition) reads it from {@link ExpandedWord.uses}.
 */

/** One word of `command` or `args` after expansion. */
export interface ExpandedWord {
  value: string;
  /** The variables its expansion used, in order (empty when it referred to none). */
  uses: V1EnvVar[];
}

export interface ExpandedCommand {
  /** Absent when the container has none (or an empty one): the image's entrypoint runs. */
  command?: ExpandedWord[];
  /** Absent when the container has none (or an empty one): the image's CMD, unless `command` is set. */
  args?: ExpandedWord[];
}

/** `command` and `args` of `container`, expanded against its own `env`. */
export function expandCommandAndArgs(
  container: Pick<V1Container, 'command' | 'args' | 'env'>,
): ExpandedCommand {
  const env = new Map<string, V1EnvVar>();
  for (const variable of container.env ?? []) env.set(variable.name, variable);
  const expand = (words: readonly string[] | undefined): ExpandedWord[] | undefined => {
    if (!words || words.length === 0) return undefined;
    return words.map((word) => {
      const uses: V1EnvVar[] = [];
      const value = expandEnv(word, (name) => {
        const found = env.get(name);
        if (found) uses.push(found);
        return found ? (found.value ?? '') : undefined;
      });
      return { value, uses };
    });
  };
  const command = expand(container.command);
  const args = expand(container.args);
  return { ...(command ? { command } : {}), ...(args ? { args } : {}) };
}

/** The words' values. */
export function wordValues(words: readonly ExpandedWord[]): string[] {
  return words.map((w) => w.value);
}

/** `command` and `args` as they run: plain strings. */
export function containerArgv(container: Pick<V1Container, 'command' | 'args' | 'env'>): {
  command?: string[];
  args?: string[];
} {
  const { command, args } = expandCommandAndArgs(container);
  return {
    ...(command ? { command: wordValues(command) } : {}),
    ...(args ? { args: wordValues(args) } : {}),
  };
}
