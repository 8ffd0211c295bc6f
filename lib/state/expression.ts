/**
 * DynamoDB expressions as the state table takes them: the expression string
 * with its own placeholders, merged into one request's attribute maps.
 */

/**
 * A condition or update expression with its placeholders, e.g.
 * `{ expression: '#v = :v', names: { '#v': 'version' }, values: { ':v': 3 } }`.
 * When an update and its condition are combined, a placeholder used by both
 * must mean the same thing.
 */
export interface Expression {
  expression: string;
  names?: Record<string, string>;
  values?: Record<string, unknown>;
}

/** Sort-key condition of a query, on `sk` (or `gsi1sk` for the index). */
export type SortKeyCondition =
  | { op: '=' | '<' | '<=' | '>' | '>=' | 'begins_with'; value: string }
  | { op: 'between'; from: string; to: string };

/** The key condition of a query on one partition of the table (`pk`, `sk`) or of gsi1 (`gsi1pk`, `gsi1sk`). */
export function keyCondition(
  partition: string,
  sk: SortKeyCondition | undefined,
  onIndex: boolean,
): Expression {
  const names: Record<string, string> = { '#pk': onIndex ? 'gsi1pk' : 'pk' };
  const values: Record<string, unknown> = { ':pk': partition };
  let expression = '#pk = :pk';
  if (sk) {
    names['#sk'] = onIndex ? 'gsi1sk' : 'sk';
    if (sk.op === 'between') {
      expression += ' AND #sk BETWEEN :from AND :to';
      values[':from'] = sk.from;
      values[':to'] = sk.to;
    } else {
      expression += sk.op === 'begins_with' ? ' AND begins_with(#sk, :sk)' : ` AND #sk ${sk.op} :sk`;
      values[':sk'] = sk.value;
    }
  }
  return { expression, names, values };
}

/**
 * ExpressionAttributeNames/Values of several expressions, merged. DynamoDB
 * rejects empty maps and placeholders it does not use, hence undefined when
 * none are given.
 * @throws TypeError when two expressions give one placeholder different meanings.
 */
export function placeholders(expressions: (Expression | undefined)[]): {
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
} {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  for (const e of expressions) {
    mergeInto(names, e?.names, 'name');
    mergeInto(values, e?.values, 'value');
  }
  return {
    ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
    ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
  };
}

function mergeInto<T>(target: Record<string, T>, source: Record<string, T> | undefined, kind: string): void {
  for (const [placeholder, value] of Object.entries(source ?? {})) {
    if (placeholder in target && !Object.is(target[placeholder], value)) {
      throw new TypeError(`placeholder ${placeholder} has two different ${kind}s in one request`);
    }
    target[placeholder] = value;
  }
}
