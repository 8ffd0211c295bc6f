/**
 * The pods the provider refused during a run, by namespace, read from the
 * node's log (the functions' JSON lines: pod-sync logs each refusal with the
 * pod's key and the ProviderUnsupportedError's reasons). A spec that passes
 * although its pod was refused passed for the wrong reason (a spec that waits
 * for a readiness probe to keep a pod unready, say), so the report counts it
 * as failed; e2e.test names each spec's namespace in its captured output
 * (`Destroying namespace "x" for this suite`).
 */
import { readFileSync } from 'node:fs';

/** Namespace → the provider's reasons for refusing a pod there. */
export function refusedNamespaces(nodeLog: string): Map<string, string> {
  const refused = new Map<string, string>();
  let text: string;
  try {
    text = readFileSync(nodeLog, 'utf8');
  } catch {
    return refused;
  }
  for (const line of text.split('\n')) {
    if (!line.includes('ProviderUnsupportedError')) continue;
    const entry = refusal(line);
    if (entry) refused.set(entry.namespace, entry.reasons);
  }
  return refused;
}

function refusal(line: string): { namespace: string; reasons: string } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || !('pod' in parsed) || !('err' in parsed))
    return undefined;
  const { pod, err } = parsed;
  if (typeof pod !== 'string' || typeof err !== 'object' || err === null) return undefined;
  if (!('type' in err) || err.type !== 'ProviderUnsupportedError' || !('reasons' in err)) return undefined;
  const reasons = Array.isArray(err.reasons) ? err.reasons.filter((r) => typeof r === 'string') : [];
  const namespace = pod.split('/')[0];
  return namespace ? { namespace, reasons: reasons.join('; ') } : undefined;
}

/** The namespaces a spec's captured output says it used. */
export function specNamespaces(output: string): string[] {
  return [...output.matchAll(/Destroying namespace "([^"]+)" for this suite/g)].map((m) => m[1] ?? '');
}
