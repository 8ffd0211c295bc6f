import type { KubeHttp } from './kube-http.ts';
import type { KubeRequest, Query } from './kube-request.ts';
import type { RequestOptions } from './patch.ts';

/** client-node's model of each kind the functions read, by which its ObjectSerializer reads an answer. */
const MODELS = {
  Pod: 'V1Pod',
  Node: 'V1Node',
  Lease: 'V1Lease',
  Namespace: 'V1Namespace',
  Secret: 'V1Secret',
  ConfigMap: 'V1ConfigMap',
  Service: 'V1Service',
  Event: 'CoreV1Event',
  TokenReview: 'V1TokenReview',
  TokenRequest: 'AuthenticationV1TokenRequest',
  SubjectAccessReview: 'V1SubjectAccessReview',
  Status: 'V1Status',
} as const;

export type Kind = keyof typeof MODELS;

/** The kinds whose lists the functions read, and client-node's list models. */
const LIST_MODELS = {
  Pod: 'V1PodList',
  Service: 'V1ServiceList',
} as const satisfies Partial<Record<Kind, string>>;

export type ListedKind = keyof typeof LIST_MODELS;

type Serializer =
  typeof import('@kubernetes/client-node/dist/gen/models/ObjectSerializer.js')['ObjectSerializer'];

let serializer: Promise<Serializer> | undefined;

/**
 * client-node's ObjectSerializer, loaded at the first answer rather than
 * with the function: its module reaches every model class of client-node
 * (docs/benchmarks.md, "Cold start", for what that costs).
 */
function objectSerializer(): Promise<Serializer> {
  serializer ??= import('@kubernetes/client-node/dist/gen/models/ObjectSerializer.js').then(
    (module) => module.ObjectSerializer,
  );
  return serializer;
}

/**
 * An answer (parsed JSON) as client-node's typed APIs return it: read by its
 * ObjectSerializer as `model`, so date-time fields are Dates where its
 * models say so (a pod's spec hash, lib/pod/pod-hash.ts, writes
 * `creationTimestamp` as `Date.toISOString()` does, and the known-pod
 * records in DynamoDB keep that hash across releases), MicroTime fields
 * (a Lease's renewTime) stay the wire strings, a list's `metadata.continue`
 * is `_continue`, and fields client-node's models do not have are left out.
 */
async function deserialize<T>(model: string, answer: unknown): Promise<T> {
  return (await objectSerializer()).deserialize(answer, model, '') as T;
}

/** Request parameters that are not query parameters: they name the object or are its body. */
const NOT_QUERY = new Set(['name', 'namespace', 'body']);

/**
 * The query of a typed call: every parameter but the name, the namespace and
 * the body, under its wire name (client-node spells `continue` `_continue`).
 */
export function queryOf(param: object): Query {
  const query: Query = {};
  for (const [key, value] of Object.entries(param)) {
    if (NOT_QUERY.has(key) || value === undefined) continue;
    query[key === '_continue' ? 'continue' : key] = value as Query[string];
  }
  return query;
}

/** One path segment (a name or a namespace), escaped. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

/**
 * How each typed method sends its request and reads its answer: the
 * parameters' query and body, the per-call headers (a patch's Content-Type),
 * and the answer read as client-node's model of its kind ({@link deserialize}).
 */
export class TypedCalls {
  constructor(readonly http: KubeHttp) {}

  /** An answer that is one object of `kind`. */
  async object<T>(
    kind: Kind,
    method: KubeRequest['method'],
    path: string,
    param: object,
    options?: RequestOptions,
  ): Promise<T> {
    return deserialize<T>(MODELS[kind], await this.http.json(this.#request(method, path, param, options)));
  }

  /** An answer that is a list of `kind`. */
  async list<T>(kind: ListedKind, path: string, param: object, options?: RequestOptions): Promise<T> {
    return deserialize<T>(
      LIST_MODELS[kind],
      await this.http.json(this.#request('GET', path, param, options)),
    );
  }

  #request(
    method: KubeRequest['method'],
    path: string,
    param: object,
    options?: RequestOptions,
  ): KubeRequest {
    const body = 'body' in param ? param.body : undefined;
    return {
      method,
      path,
      query: queryOf(param),
      ...(body !== undefined ? { body } : {}),
      ...(options?.headers ? { headers: options.headers } : {}),
    };
  }
}
