import { load } from 'js-yaml';
import { applyNodeConfigDocument, type NodeConfigDocument } from '../config/node-config-document.ts';
import type { NodeSettings } from '../config/node-settings.ts';

/** The data keys an assigned-config ConfigMap may hold its document in (exactly one of them). */
export const CONFIG_DATA_KEYS = ['config.yaml', 'config.json'] as const;

/** The outcome of validating an assigned config: the settings to use, or why it cannot be used. */
export type AssignedConfig =
  | { ok: true; document: NodeConfigDocument; settings: NodeSettings }
  | { ok: false; reason: string };

/**
 * Parses a ConfigMap's `data` into a node config document and lays it over
 * the local settings, with the same validation as the local config. Never
 * throws: a bad document is a reason, naming the key and every bad field.
 */
export function parseAssignedConfig(
  local: NodeSettings,
  data: Readonly<Record<string, string>> | undefined,
): AssignedConfig {
  const present = CONFIG_DATA_KEYS.filter((key) => data?.[key] !== undefined);
  const [key] = present;
  if (key === undefined || present.length > 1) {
    return {
      ok: false,
      reason:
        present.length > 1
          ? `holds both ${CONFIG_DATA_KEYS.join(' and ')}; keep one`
          : `has no data key ${CONFIG_DATA_KEYS.join(' or ')}`,
    };
  }
  const text = data?.[key] ?? '';
  let raw: unknown;
  try {
    raw = key === 'config.json' ? JSON.parse(text) : load(text);
  } catch (err) {
    const message = err instanceof Error ? (err as Error & { reason?: string }).message : String(err);
    return { ok: false, reason: `${key} does not parse: ${firstLine(message)}` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, reason: `${key} must hold a mapping of settings (e.g. labels, capacity)` };
  }
  return validateDocument(local, raw, key);
}

/** Validates an already parsed document (a ConfigMap's, or a checkpoint's) against the local settings. */
export function validateDocument(local: NodeSettings, raw: unknown, where: string): AssignedConfig {
  const result = applyNodeConfigDocument(local, raw);
  if (result.ok) return result;
  return {
    ok: false,
    reason: `${where} is invalid: ${result.issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`,
  };
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}
