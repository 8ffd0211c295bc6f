import '../lib/response-streaming.ts';
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import { loadDependencies } from '../lib/app/dependencies.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { coldStartDependencies } from '../lib/handler/cold-start.ts';
import { type FunctionContext, invocationScope } from '../lib/handler/function-context.ts';
import { invocationLog } from '../lib/invocation.ts';
import {
  kubeletApi,
  kubeletApiDependencies,
  type StreamedResponse,
} from '../lib/kubelet-api/kubelet-api-entry.ts';
import type { KubeletApiDependencies } from '../lib/kubelet-api/serve.ts';

/**
 * Behind API Gateway (REST API, mutual TLS, response streaming): the kubelet
 * read API of every node of the deployment, which kube-apiserver reaches for
 * `kubectl logs`, `kubectl get --raw /api/v1/nodes/<node>/proxy/...` and
 * metrics. A streaming handler (middy's streamify mode), so that a `follow`
 * streams. Dependencies are built at the first invocation (cold start); a
 * malformed event is answered 400 by kubeletApi rather than failed, since an
 * HTTP client is waiting; it writes nothing, so no release gate stands
 * before it.
 */
export function createKubeletApiHandler(env: Record<string, string | undefined> = process.env) {
  let api: KubeletApiDependencies | undefined;
  return middy<unknown, StreamedResponse, Error, FunctionContext>({
    executionMode: executionModeStreamifyResponse,
  })
    .use(coldStartDependencies((functionName) => loadDependencies(loadConfig(env), { functionName }), env))
    .handler((event, context) => {
      const { deps, invocation } = invocationScope(context);
      api ??= kubeletApiDependencies(deps);
      return kubeletApi(
        event,
        { ...api, log: invocationLog(api.log, invocation) },
        { signal: invocation.signal, requestId: invocation.requestId },
      );
    });
}

export const handler = createKubeletApiHandler();
