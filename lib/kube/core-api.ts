import type {
  AuthenticationV1TokenRequest,
  CoreV1ApiCreateNamespacedEventRequest,
  CoreV1ApiCreateNamespacedServiceAccountTokenRequest,
  CoreV1ApiCreateNamespaceRequest,
  CoreV1ApiCreateNodeRequest,
  CoreV1ApiDeleteNamespacedPodRequest,
  CoreV1ApiDeleteNodeRequest,
  CoreV1ApiListNamespacedPodRequest,
  CoreV1ApiListNamespacedServiceRequest,
  CoreV1ApiListPodForAllNamespacesRequest,
  CoreV1ApiPatchNamespacedEventRequest,
  CoreV1ApiPatchNamespacedPodStatusRequest,
  CoreV1ApiPatchNodeRequest,
  CoreV1ApiPatchNodeStatusRequest,
  CoreV1ApiReadNamespacedConfigMapRequest,
  CoreV1ApiReadNamespacedPodRequest,
  CoreV1ApiReadNamespacedSecretRequest,
  CoreV1ApiReadNamespaceRequest,
  CoreV1ApiReadNodeRequest,
  CoreV1ApiReplaceNamespacedPodStatusRequest,
  CoreV1Event,
  V1ConfigMap,
  V1Namespace,
  V1Node,
  V1Pod,
  V1PodList,
  V1Secret,
  V1ServiceList,
  V1Status,
} from '@kubernetes/client-node';
import type { KubeHttp } from './kube-http.ts';
import type { RequestOptions } from './patch.ts';
import { segment as s, TypedCalls } from './typed-calls.ts';

const NODES = '/api/v1/nodes';

function namespaced(namespace: string, resource: string, name?: string): string {
  return `/api/v1/namespaces/${s(namespace)}/${resource}${name === undefined ? '' : `/${s(name)}`}`;
}

/**
 * The core/v1 calls the functions make, with client-node's CoreV1Api
 * signatures (its request types, erased at build), so a call site reads the
 * same: `core.readNode({ name })`, `core.patchNode({ name, body },
 * setHeaderOptions('Content-Type', PatchStrategy.MergePatch))`. Answers come
 * back as client-node's do, read by its ObjectSerializer (typed-calls.ts); an
 * answer outside 2xx rejects with a KubeApiError. Other calls (tests, tools)
 * use client-node itself (tooling-clients.ts).
 */
export class CoreApi {
  // A property, not a #private field: an object made with Object.create(api) that overrides one
  // method (a test's stand-in for a refused call) still reaches it, as with client-node's APIs.
  private readonly calls: TypedCalls;

  constructor(http: KubeHttp) {
    this.calls = new TypedCalls(http);
  }

  readNode(param: CoreV1ApiReadNodeRequest, options?: RequestOptions): Promise<V1Node> {
    return this.calls.object('Node', 'GET', `${NODES}/${s(param.name)}`, param, options);
  }

  createNode(param: CoreV1ApiCreateNodeRequest, options?: RequestOptions): Promise<V1Node> {
    return this.calls.object('Node', 'POST', NODES, param, options);
  }

  /** The patch strategy is the Content-Type of `options` (setHeaderOptions). */
  patchNode(param: CoreV1ApiPatchNodeRequest, options: RequestOptions): Promise<V1Node> {
    return this.calls.object('Node', 'PATCH', `${NODES}/${s(param.name)}`, param, options);
  }

  /** The patch strategy is the Content-Type of `options` (setHeaderOptions). */
  patchNodeStatus(param: CoreV1ApiPatchNodeStatusRequest, options: RequestOptions): Promise<V1Node> {
    return this.calls.object('Node', 'PATCH', `${NODES}/${s(param.name)}/status`, param, options);
  }

  deleteNode(param: CoreV1ApiDeleteNodeRequest, options?: RequestOptions): Promise<V1Status> {
    return this.calls.object('Status', 'DELETE', `${NODES}/${s(param.name)}`, param, options);
  }

  readNamespacedPod(param: CoreV1ApiReadNamespacedPodRequest, options?: RequestOptions): Promise<V1Pod> {
    const path = namespaced(param.namespace, 'pods', param.name);
    return this.calls.object('Pod', 'GET', path, param, options);
  }

  /** The patch strategy is the Content-Type of `options` (setHeaderOptions). */
  patchNamespacedPodStatus(
    param: CoreV1ApiPatchNamespacedPodStatusRequest,
    options: RequestOptions,
  ): Promise<V1Pod> {
    const path = `${namespaced(param.namespace, 'pods', param.name)}/status`;
    return this.calls.object('Pod', 'PATCH', path, param, options);
  }

  replaceNamespacedPodStatus(
    param: CoreV1ApiReplaceNamespacedPodStatusRequest,
    options?: RequestOptions,
  ): Promise<V1Pod> {
    const path = `${namespaced(param.namespace, 'pods', param.name)}/status`;
    return this.calls.object('Pod', 'PUT', path, param, options);
  }

  deleteNamespacedPod(param: CoreV1ApiDeleteNamespacedPodRequest, options?: RequestOptions): Promise<V1Pod> {
    const path = namespaced(param.namespace, 'pods', param.name);
    return this.calls.object('Pod', 'DELETE', path, param, options);
  }

  listNamespacedPod(param: CoreV1ApiListNamespacedPodRequest, options?: RequestOptions): Promise<V1PodList> {
    return this.calls.list('Pod', namespaced(param.namespace, 'pods'), param, options);
  }

  listPodForAllNamespaces(
    param: CoreV1ApiListPodForAllNamespacesRequest = {},
    options?: RequestOptions,
  ): Promise<V1PodList> {
    return this.calls.list('Pod', '/api/v1/pods', param, options);
  }

  listNamespacedService(
    param: CoreV1ApiListNamespacedServiceRequest,
    options?: RequestOptions,
  ): Promise<V1ServiceList> {
    return this.calls.list('Service', namespaced(param.namespace, 'services'), param, options);
  }

  createNamespacedEvent(
    param: CoreV1ApiCreateNamespacedEventRequest,
    options?: RequestOptions,
  ): Promise<CoreV1Event> {
    return this.calls.object('Event', 'POST', namespaced(param.namespace, 'events'), param, options);
  }

  /** The patch strategy is the Content-Type of `options` (setHeaderOptions). */
  patchNamespacedEvent(
    param: CoreV1ApiPatchNamespacedEventRequest,
    options: RequestOptions,
  ): Promise<CoreV1Event> {
    const path = namespaced(param.namespace, 'events', param.name);
    return this.calls.object('Event', 'PATCH', path, param, options);
  }

  readNamespace(param: CoreV1ApiReadNamespaceRequest, options?: RequestOptions): Promise<V1Namespace> {
    return this.calls.object('Namespace', 'GET', `/api/v1/namespaces/${s(param.name)}`, param, options);
  }

  createNamespace(param: CoreV1ApiCreateNamespaceRequest, options?: RequestOptions): Promise<V1Namespace> {
    return this.calls.object('Namespace', 'POST', '/api/v1/namespaces', param, options);
  }

  readNamespacedSecret(
    param: CoreV1ApiReadNamespacedSecretRequest,
    options?: RequestOptions,
  ): Promise<V1Secret> {
    const path = namespaced(param.namespace, 'secrets', param.name);
    return this.calls.object('Secret', 'GET', path, param, options);
  }

  readNamespacedConfigMap(
    param: CoreV1ApiReadNamespacedConfigMapRequest,
    options?: RequestOptions,
  ): Promise<V1ConfigMap> {
    const path = namespaced(param.namespace, 'configmaps', param.name);
    return this.calls.object('ConfigMap', 'GET', path, param, options);
  }

  /** A token of the service account `name` (TokenRequest), for a pod's projected serviceAccountToken volume. */
  createNamespacedServiceAccountToken(
    param: CoreV1ApiCreateNamespacedServiceAccountTokenRequest,
    options?: RequestOptions,
  ): Promise<AuthenticationV1TokenRequest> {
    const path = `${namespaced(param.namespace, 'serviceaccounts', param.name)}/token`;
    return this.calls.object('TokenRequest', 'POST', path, param, options);
  }
}
