/**
 * Validators for Kubernetes names and values, with the rules the API server
 * applies, so that bad configuration fails at cold start instead of on the
 * first write.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
export type TaintEffect = (typeof TAINT_EFFECTS)[number];

/** Returns why `name` is not a DNS-1123 subdomain (a valid Node name), or undefined. */
export function dns1123SubdomainError(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if (name.length > 253) return 'must be at most 253 characters';
  if (!name.split('.').every((part) => DNS1123_LABEL.test(part))) {
    return 'must be lowercase alphanumerics, "-" and ".", starting and ending with an alphanumeric';
  }
  return undefined;
}

/** Returns why `key` is not a valid label or taint key, or undefined. */
export function qualifiedNameError(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined) {
    const prefixError = dns1123SubdomainError(prefix);
    if (prefixError) return `prefix "${prefix}" ${prefixError}`;
  }
  if (name.length === 0 || name.length > 63) return `name "${name}" must be 1 to 63 characters`;
  if (!QUALIFIED_NAME.test(name)) {
    return `name "${name}" must be alphanumerics, "-", "_" and ".", starting and ending with an alphanumeric`;
  }
  return undefined;
}

/** Returns why `value` is not a valid label value, or undefined. */
export function labelValueError(value: string): string | undefined {
  if (value.length > 63) return 'must be at most 63 characters';
  if (!LABEL_VALUE.test(value)) {
    return 'must be empty or alphanumerics, "-", "_" and ".", starting and ending with an alphanumeric';
  }
  return undefined;
}
