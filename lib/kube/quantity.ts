/**
 * Kubernetes resource quantities (apimachinery's resource.Quantity): a
 * decimal number, then a binary suffix (Ki..Ei), a decimal suffix (n, u, m,
 * k, M..E) or a decimal exponent (`e3`, `E-2`). Only non-negative quantities
 * are accepted: capacities, limits, requests and divisors never are negative.
 */
const QUANTITY = /^\+?(?=\.?\d)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?$/;

/** Each suffix as the fraction it multiplies by. */
const SUFFIXES: Readonly<Record<string, readonly [bigint, bigint]>> = {
  n: [1n, 10n ** 9n],
  u: [1n, 10n ** 6n],
  m: [1n, 1000n],
  '': [1n, 1n],
  k: [1000n, 1n],
  M: [10n ** 6n, 1n],
  G: [10n ** 9n, 1n],
  T: [10n ** 12n, 1n],
  P: [10n ** 15n, 1n],
  E: [10n ** 18n, 1n],
  Ki: [2n ** 10n, 1n],
  Mi: [2n ** 20n, 1n],
  Gi: [2n ** 30n, 1n],
  Ti: [2n ** 40n, 1n],
  Pi: [2n ** 50n, 1n],
  Ei: [2n ** 60n, 1n],
};

/** A quantity's exact value, `num / den`. */
export interface QuantityValue {
  num: bigint;
  den: bigint;
}

/** True when `text` is a resource quantity such as `4`, `500m`, `16Gi`, `1e3`. */
export function isQuantity(text: string): boolean {
  return QUANTITY.test(text);
}

/** A resource quantity's exact value, or undefined when `text` is not one. */
export function parseQuantity(text: string): QuantityValue | undefined {
  const m = QUANTITY.exec(text);
  if (!m) return undefined;
  const frac = m[2] ?? '';
  let num = BigInt((m[1] || '0') + frac);
  let den = 10n ** BigInt(frac.length);
  const suffix = m[3] ?? '';
  // `E` alone is exa; followed by digits it is an exponent.
  if (/^[eE][+-]?\d/.test(suffix)) {
    const exp = Number(suffix.slice(1));
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den *= 10n ** BigInt(-exp);
  } else {
    const [mul, div] = SUFFIXES[suffix] ?? [1n, 1n];
    num *= mul;
    den *= div;
  }
  return { num, den };
}
