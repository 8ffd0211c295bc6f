import type {
  AuthenticationV1ApiCreateTokenReviewRequest,
  AuthorizationV1ApiCreateSubjectAccessReviewRequest,
  CoordinationV1ApiCreateNamespacedLeaseRequest,
  CoordinationV1ApiDeleteNamespacedLeaseRequest,
  CoordinationV1ApiReadNamespacedLeaseRequest,
  CoordinationV1ApiReplaceNamespacedLeaseRequest,
  V1Lease,
  V1Status,
  V1SubjectAccessReview,
  V1TokenReview,
} from '@kubernetes/client-node';
import type { KubeHttp } from './kube-http.ts';
import type { RequestOptions } from './patch.ts';
import { segment as s, TypedCalls } from './typed-calls.ts';

/** The calls of the API groups besides core/v1, with client-node's signatures (see core-api.ts). */

function leases(namespace: string, name?: string): string {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${s(namespace)}/leases`;
  return name === undefined ? base : `${base}/${s(name)}`;
}

/** coordination.k8s.io/v1: the node Leases. */
export class CoordinationApi {
  private readonly calls: TypedCalls;

  constructor(http: KubeHttp) {
    this.calls = new TypedCalls(http);
  }

  readNamespacedLease(param: CoordinationV1ApiReadNamespacedLeaseRequest, options?: RequestOptions) {
    return this.calls.object<V1Lease>('Lease', 'GET', leases(param.namespace, param.name), param, options);
  }

  createNamespacedLease(param: CoordinationV1ApiCreateNamespacedLeaseRequest, options?: RequestOptions) {
    return this.calls.object<V1Lease>('Lease', 'POST', leases(param.namespace), param, options);
  }

  replaceNamespacedLease(param: CoordinationV1ApiReplaceNamespacedLeaseRequest, options?: RequestOptions) {
    return this.calls.object<V1Lease>('Lease', 'PUT', leases(param.namespace, param.name), param, options);
  }

  deleteNamespacedLease(param: CoordinationV1ApiDeleteNamespacedLeaseRequest, options?: RequestOptions) {
    const path = leases(param.namespace, param.name);
    return this.calls.object<V1Status>('Status', 'DELETE', path, param, options);
  }
}

/** authentication.k8s.io/v1: TokenReview, as a kubelet in webhook mode authenticates bearer tokens. */
export class AuthenticationApi {
  private readonly calls: TypedCalls;

  constructor(http: KubeHttp) {
    this.calls = new TypedCalls(http);
  }

  createTokenReview(param: AuthenticationV1ApiCreateTokenReviewRequest, options?: RequestOptions) {
    const path = '/apis/authentication.k8s.io/v1/tokenreviews';
    return this.calls.object<V1TokenReview>('TokenReview', 'POST', path, param, options);
  }
}

/** authorization.k8s.io/v1: SubjectAccessReview, as a kubelet in webhook mode authorizes requests. */
export class AuthorizationApi {
  private readonly calls: TypedCalls;

  constructor(http: KubeHttp) {
    this.calls = new TypedCalls(http);
  }

  createSubjectAccessReview(
    param: AuthorizationV1ApiCreateSubjectAccessReviewRequest,
    options?: RequestOptions,
  ) {
    const path = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
    return this.calls.object<V1SubjectAccessReview>('SubjectAccessReview', 'POST', path, param, options);
  }
}
