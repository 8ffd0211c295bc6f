import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isQuantity, parseQuantity } from '../../lib/kube/quantity.ts';

describe('resource quantities', () => {
  it('accepts plain, suffixed, fractional and exponent forms, and parses them exactly', () => {
    const cases: Array<[string, bigint, bigint]> = [
      ['4', 4n, 1n],
      ['+4', 4n, 1n],
      ['500m', 500n, 1000n],
      ['16Gi', 16n * 2n ** 30n, 1n],
      ['1.5k', 15000n, 10n],
      ['.5', 5n, 10n],
      ['5.', 5n, 1n],
      ['1e3', 1000n, 1n],
      ['25E-1', 25n, 10n],
      ['2E', 2n * 10n ** 18n, 1n],
      ['100n', 100n, 10n ** 9n],
    ];
    for (const [text, num, den] of cases) {
      assert.equal(isQuantity(text), true, text);
      const value = parseQuantity(text);
      assert.ok(value, text);
      // Compare as fractions: num/den == expected num/den.
      assert.equal(value.num * den, num * value.den, text);
    }
  });

  it('rejects anything else, negative quantities included, in validation and parsing alike', () => {
    for (const text of ['', '.', 'lots', '-1', ' 1', '1 ', '1Ki2', '1KiB', '1e', 'e3', 'four']) {
      assert.equal(isQuantity(text), false, JSON.stringify(text));
      assert.equal(parseQuantity(text), undefined, JSON.stringify(text));
    }
  });
});
