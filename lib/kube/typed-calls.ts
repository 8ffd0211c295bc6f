import { type DatedKind, reviveDates, reviveList } from './date-fields.ts';
import type { KubeHttp } from './kube-http.ts';
import type { KubeRequest, Query } from './kube-request.ts';
import type { RequestOptions } from './patch.ts';

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
 * and the answer's date-time fields revived for its kind (date-fields.ts).
 */
export class TypedCalls {
  constructor(readonly http: KubeHttp) {}

  /** An answer that is one object of `kind`. */
  async object<T>(
    kind: DatedKind,
    method: KubeRequest['method'],
    path: string,
    param: object,
    options?: RequestOptions,
  ): Promise<T> {
    return reviveDates(kind, await this.http.json<T>(this.#request(method, path, param, options)));
  }

  /** An answer that is a list of `kind`. */
  async list<T>(kind: DatedKind, path: string, param: object, options?: RequestOptions): Promise<T> {
    return reviveList(kind, await this.http.json<T>(this.#request('GET', path, param, options)));
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
