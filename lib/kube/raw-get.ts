import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** An API server answer as it came over the wire. */
export interface RawResponse {
  status: number;
  contentType: string;
  body: Buffer;
}

/**
 * GETs `path` from the kubeconfig's API server and returns the bytes
 * unparsed: for answers passed on as the API server wrote them (the kubelet
 * API's `/pods` is the API server's PodList of the node), which a typed
 * client would re-encode differently (client-node writes dates with
 * milliseconds). Authenticates and verifies the server as the typed clients
 * do; aborted after `timeoutMs`.
 */
export async function rawGet(kc: KubeConfig, path: string, timeoutMs: number): Promise<RawResponse> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error(`current context "${kc.getCurrentContext()}" names no cluster server`);
  const url = new URL(path, server);
  const options: Parameters<typeof request>[1] = { method: 'GET', headers: { accept: 'application/json' } };
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          body: Buffer.concat(chunks),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
