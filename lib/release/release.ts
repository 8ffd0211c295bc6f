/**
 * Release numbers (`major.minor.patch`) as the reconciler and the gating
 * compare them (Monogon's `version.ReleaseLessThan`). Strings on the wire and
 * in DynamoDB, parsed only to compare, so a stored value stays readable.
 */

const RELEASE = /^(\d+)\.(\d+)\.(\d+)$/;

/** A string that is not `major.minor.patch`. */
export class InvalidReleaseError extends Error {
  override readonly name = 'InvalidReleaseError';
}

export function isRelease(value: string): boolean {
  return RELEASE.test(value);
}

function parts(release: string): [number, number, number] {
  const match = RELEASE.exec(release);
  if (!match) throw new InvalidReleaseError(`"${release}" is not a release like 1.2.3`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** Negative when a < b, 0 when equal, positive when a > b. @throws InvalidReleaseError */
export function compareReleases(a: string, b: string): number {
  const [pa, pb] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

export function releaseLessThan(a: string, b: string): boolean {
  return compareReleases(a, b) < 0;
}

export function minRelease(a: string, b: string): string {
  return releaseLessThan(b, a) ? b : a;
}

export function maxRelease(a: string, b: string): string {
  return releaseLessThan(a, b) ? b : a;
}
