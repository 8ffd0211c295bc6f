/**
 * The facts the address choice (address-choice.ts) needs, read from this
 * host and the cluster: this host's addresses, its routes (`ip route get`,
 * iproute2, which sends nothing), the kubeconfig's server resolved, and the
 * addresses the API server advertises in the `default/kubernetes` Endpoints
 * (the endpoint reconciler writes its `--advertise-address` there).
 */
import { execFile } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { promisify } from 'node:util';
import type { CoreV1Api } from '@kubernetes/client-node';
import type { ApiServerWhereabouts, HostAddress, Route } from './address-choice.ts';

const execFileAsync = promisify(execFile);

/** Every address of this host's interfaces. */
export function hostAddresses(): HostAddress[] {
  return Object.entries(networkInterfaces()).flatMap(([device, entries]) =>
    (entries ?? []).map((entry) => ({ address: entry.address, device })),
  );
}

/** How this host reaches `address`, or undefined when it has no route (or iproute2 is missing). */
export async function routeTo(address: string): Promise<Route | undefined> {
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync('ip', ['-j', 'route', 'get', address], { timeout: 10_000 }));
  } catch {
    return undefined;
  }
  const parsed: unknown = JSON.parse(stdout);
  const first: unknown = Array.isArray(parsed) ? parsed[0] : undefined;
  if (!isIpRoute(first)) return undefined;
  const { dev, prefsrc } = first;
  return { source: prefsrc, device: dev, bridge: existsSync(`/sys/class/net/${dev}/bridge`) };
}

/** One route of `ip -j route get`: the device and the source address it picks. */
function isIpRoute(value: unknown): value is { dev: string; prefsrc: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    'dev' in value &&
    typeof value.dev === 'string' &&
    'prefsrc' in value &&
    typeof value.prefsrc === 'string'
  );
}

/** The addresses the API server advertises, or none when the Endpoints are missing or not readable. */
export async function advertisedAddresses(core: CoreV1Api): Promise<string[]> {
  try {
    const endpoints = await core.readNamespacedEndpoints({ namespace: 'default', name: 'kubernetes' });
    return (endpoints.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip));
  } catch {
    return [];
  }
}

/** The addresses `server`'s host stands for (itself when it is an address). */
async function serverAddresses(server: string): Promise<string[]> {
  const host = new URL(server).hostname.replace(/^\[|\]$/g, '');
  try {
    return (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return [];
  }
}

/** The facts about where the API server of `server` runs, as seen from here. */
export async function apiServerWhereabouts(
  server: string,
  core: CoreV1Api,
  override: string | undefined,
): Promise<ApiServerWhereabouts> {
  const [advertised, kubeconfig] = await Promise.all([advertisedAddresses(core), serverAddresses(server)]);
  const targets = [...new Set([...advertised, ...kubeconfig])];
  const routes: Record<string, Route> = {};
  for (const target of targets) {
    const route = await routeTo(target);
    if (route) routes[target] = route;
  }
  return {
    ...(override !== undefined ? { override } : {}),
    advertised,
    kubeconfig,
    host: hostAddresses(),
    routes,
  };
}
