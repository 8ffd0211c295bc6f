/**
 * Native JavaScript values to DynamoDB's attribute values and back, as the
 * document client converts them with `removeUndefinedValues`: strings,
 * numbers, booleans, null, lists, maps, binary, and sets of strings or
 * numbers. Numbers travel as decimal strings; one that a JavaScript number
 * cannot hold exactly is refused rather than rounded.
 */

export type AttributeValue =
  | { S: string }
  | { N: string }
  | { BOOL: boolean }
  | { NULL: true }
  | { L: AttributeValue[] }
  | { M: Record<string, AttributeValue> }
  | { B: string }
  | { SS: string[] }
  | { NS: string[] }
  | { BS: string[] };

/** A value that has no attribute value (a function, a symbol, a bigint...). */
export class UnsupportedValueError extends TypeError {
  override readonly name = 'UnsupportedValueError';
}

/** Every attribute of `item` whose value is not undefined, converted. */
export function marshallItem(item: Record<string, unknown>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [key, value] of Object.entries(item)) {
    if (value !== undefined) out[key] = marshallValue(value);
  }
  return out;
}

export function marshallValue(value: unknown): AttributeValue {
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new UnsupportedValueError(`${value} is not a DynamoDB number`);
    return { N: String(value) };
  }
  if (typeof value === 'boolean') return { BOOL: value };
  if (value === null) return { NULL: true };
  if (Array.isArray(value)) return { L: value.filter((v) => v !== undefined).map(marshallValue) };
  if (value instanceof Uint8Array) return { B: Buffer.from(value).toString('base64') };
  if (value instanceof Set) return marshallSet(value);
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return { M: marshallItem(value as Record<string, unknown>) };
  }
  throw new UnsupportedValueError(`a ${typeof value} has no DynamoDB attribute value`);
}

function marshallSet(set: Set<unknown>): AttributeValue {
  const values = [...set];
  if (values.every((v) => typeof v === 'string')) return { SS: values };
  if (values.every((v) => typeof v === 'number')) return { NS: values.map(String) };
  if (values.every((v) => v instanceof Uint8Array)) {
    return { BS: values.map((v) => Buffer.from(v).toString('base64')) };
  }
  throw new UnsupportedValueError('a set must hold strings, numbers or binary values only');
}

export function unmarshallItem(item: Record<string, AttributeValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(item)) out[key] = unmarshallValue(value);
  return out;
}

export function unmarshallValue(value: AttributeValue): unknown {
  if ('S' in value) return value.S;
  if ('N' in value) return number(value.N);
  if ('BOOL' in value) return value.BOOL;
  if ('NULL' in value) return null;
  if ('L' in value) return value.L.map(unmarshallValue);
  if ('M' in value) return unmarshallItem(value.M);
  if ('B' in value) return new Uint8Array(Buffer.from(value.B, 'base64'));
  if ('SS' in value) return new Set(value.SS);
  if ('NS' in value) return new Set(value.NS.map(number));
  if ('BS' in value) return new Set(value.BS.map((b) => new Uint8Array(Buffer.from(b, 'base64'))));
  throw new UnsupportedValueError(`unknown attribute value ${JSON.stringify(value)}`);
}

function number(text: string): number {
  const n = Number(text);
  // A whole number beyond 2^53, or more digits than a double keeps, would come back changed.
  if (!Number.isFinite(n) || (Number.isInteger(n) && !Number.isSafeInteger(n) && String(n) !== text)) {
    throw new UnsupportedValueError(`the DynamoDB number ${text} does not fit a JavaScript number`);
  }
  return n;
}
