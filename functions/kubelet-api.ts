import '../lib/response-streaming.ts';
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { Context } from 'aws-lambda';
import { loadDependencies } from '../lib/app/dependencies.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { invocationOf } from '../lib/invocation.ts';
import { kubeletApi, kubeletApiDependencies } from '../lib/kubelet-api/kubelet-api-entry.ts';
import type { KubeletApiDependencies } from '../lib/kubelet-api/serve.ts';

/**
 * Behind API Gateway (REST API, mutual TLS, response streaming): the kubelet
 * read API of every node of the deployment, which kube-apiserver reaches for
 * `kubectl logs`, `kubectl get --raw /api/v1/nodes/<node>/proxy/...` and
 * metrics. A streaming handler, so that a `follow` can stream. `env` is read
 * once, at the first invocation (cold start). It writes nothing, so no
 * release gate stands before it.
 */
export function createKubeletApiHandler(env: Record<string, string | undefined> = process.env) {
  let deps: KubeletApiDependencies | undefined;
  return middy(
    async (event: unknown, context: Context) => {
      deps ??= kubeletApiDependencies(
        await loadDependencies(loadConfig(env), { functionName: context.functionName }),
      );
      return kubeletApi(event, deps, invocationOf(context, deps.clock).signal);
    },
    { executionMode: executionModeStreamifyResponse },
  );
}

export const handler = createKubeletApiHandler();
