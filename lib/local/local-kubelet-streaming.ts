import { loadDependencies } from '../app/dependencies.ts';
import { loadConfig } from '../config/load-config.ts';
import { kubeletApiDependencies } from '../kubelet-api/kubelet-api-dependencies.ts';
import type { KubeletApiDependencies } from '../kubelet-api/serve.ts';
import {
  KubeletStreaming,
  type KubeletStreamingOptions,
} from '../kubelet-api/streaming/kubelet-streaming.ts';

/**
 * The streaming endpoints of a front that can upgrade connections (the
 * local one), built from the same environment as the kubelet API function:
 * its dependencies are loaded at the first upgrade request (as a cold start
 * loads the function's), and loaded again after a failure.
 */
export function createKubeletStreaming(
  env: Record<string, string | undefined>,
  options: KubeletStreamingOptions = {},
): KubeletStreaming {
  let loading: Promise<KubeletApiDependencies> | undefined;
  const deps = () => {
    loading ??= loadDependencies(loadConfig(env), { functionName: 'kubelet-api' })
      .then(kubeletApiDependencies)
      .catch((err: unknown) => {
        loading = undefined;
        throw err;
      });
    return loading;
  };
  return new KubeletStreaming(deps, options);
}
