import * as z from 'zod/mini';
import '../util/zod-mini.ts';
import {
  bounded,
  capacitySchema,
  labelsSchema,
  leaseRuleError,
  NODE_RANGES,
  type NodeSettings,
  taintSchema,
} from './node-settings.ts';

/**
 * The node settings an assigned config (a ConfigMap) may set, with the same
 * value rules as their environment variables. Every field is optional: those
 * set replace the local config's, the others keep it. Unknown fields are
 * rejected, so a typo never passes silently.
 */
export const nodeConfigDocumentSchema = z.strictObject({
  labels: z.optional(labelsSchema),
  taints: z.optional(z.array(taintSchema)),
  capacity: z.optional(capacitySchema),
  leaseDurationSeconds: z.optional(bounded(...NODE_RANGES.leaseDurationSeconds)),
  leaseRenewIntervalSeconds: z.optional(bounded(...NODE_RANGES.leaseRenewIntervalSeconds)),
  statusIntervalSeconds: z.optional(bounded(...NODE_RANGES.statusIntervalSeconds)),
  pingIntervalSeconds: z.optional(bounded(...NODE_RANGES.pingIntervalSeconds)),
});

/** A validated assigned node config: the settings it overrides. */
export type NodeConfigDocument = z.infer<typeof nodeConfigDocumentSchema>;

/** One setting of a node config document that failed validation. */
export interface NodeConfigIssue {
  /** The document's field, e.g. `capacity` or `leaseDurationSeconds`. */
  field: string;
  message: string;
}

/** `local` with the settings `document` overrides replaced. */
function overlay(local: NodeSettings, document: NodeConfigDocument): NodeSettings {
  const d = document;
  return {
    ...local,
    ...(d.labels ? { labels: d.labels } : {}),
    ...(d.taints ? { taints: d.taints } : {}),
    ...(d.capacity ? { capacity: d.capacity } : {}),
    ...(d.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: d.leaseDurationSeconds } : {}),
    ...(d.leaseRenewIntervalSeconds !== undefined
      ? { leaseRenewIntervalMs: d.leaseRenewIntervalSeconds * 1000 }
      : {}),
    ...(d.statusIntervalSeconds !== undefined ? { statusIntervalMs: d.statusIntervalSeconds * 1000 } : {}),
    ...(d.pingIntervalSeconds !== undefined ? { pingIntervalMs: d.pingIntervalSeconds * 1000 } : {}),
  };
}

/**
 * Validates an assigned node config document (already parsed from YAML or
 * JSON) and lays it over the local settings. Returns the settings to use, or
 * every issue found (naming each bad field) when the document is invalid.
 * The lease rule applies to the result, so a document that changes only the
 * renew interval is checked against the local lease duration.
 */
export function applyNodeConfigDocument(
  local: NodeSettings,
  raw: unknown,
):
  | { ok: true; document: NodeConfigDocument; settings: NodeSettings }
  | { ok: false; issues: NodeConfigIssue[] } {
  const parsed = nodeConfigDocumentSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      ok: false,
      issues: parsed.error.issues.map((issue) => ({
        field: issue.path.length > 0 ? issue.path.map(String).join('.') : 'document',
        message: issue.message,
      })),
    };
  }
  const settings = overlay(local, parsed.data);
  const leaseError = leaseRuleError(settings.leaseDurationSeconds, settings.leaseRenewIntervalMs / 1000);
  if (leaseError) return { ok: false, issues: [{ field: 'leaseDurationSeconds', message: leaseError }] };
  return { ok: true, document: parsed.data, settings };
}
