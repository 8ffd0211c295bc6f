import * as z from 'zod/mini';
import '../util/zod-mini.ts';
import { bounded } from './node-settings.ts';

/**
 * The building blocks of reading configuration from environment variables,
 * shared by loadConfig (lib/config/load-config.ts) and every provider's settings module: each
 * variable is parsed on its own, so one bad variable never hides another,
 * and rules between variables run on the values that did parse.
 */

/** One environment variable (or several, joined by `, `) that failed validation. */
export interface ConfigIssue {
  variable: string;
  message: string;
}

/** Environment variables as a process receives them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Each variable's rule: a schema from its string (undefined when not given) to its typed value. */
export type VariableRules = Record<string, z.ZodMiniType>;

/** The typed values of the variables `R` describes. */
export type Variables<R extends VariableRules> = { [K in keyof R]: z.output<R[K]> };

/** Settings parsed from the environment, or every issue found. */
export type SettingsResult<S> = { ok: true; settings: S } | { ok: false; issues: ConfigIssue[] };

/**
 * The variables that are given: empty counts as unset, as in a serverless.yml
 * that passes `${env:X, ''}`.
 */
export function givenVariables(env: Env): Record<string, string> {
  const given: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && value !== '') given[name] = value;
  return given;
}

function keysOf<T extends object>(object: T): Array<keyof T & string> {
  return Object.keys(object).filter((key): key is keyof T & string => key in object);
}

/**
 * Parses every variable of `rules` from `env` on its own. `values` holds each
 * variable that passed its rule (unset optional ones as undefined); a
 * variable that failed is absent from it and named in `issues`.
 */
export function parseVariables<R extends VariableRules>(
  rules: R,
  env: Env,
): { values: Partial<Variables<R>>; issues: ConfigIssue[] } {
  const values: Partial<Variables<R>> = {};
  const issues: ConfigIssue[] = [];
  const parseOne = <K extends keyof R & string>(variable: K, rule: R[K]): void => {
    const parsed = z.safeParse(rule, env[variable]);
    if (parsed.success) values[variable] = parsed.data;
    else issues.push(...parsed.error.issues.map((issue) => ({ variable, message: issue.message })));
  };
  for (const variable of keysOf(rules)) parseOne(variable, rules[variable]);
  return { values, issues };
}

/** True when every variable of `rules` parsed. */
export function parsedAll<R extends VariableRules>(
  rules: R,
  values: Partial<Variables<R>>,
): values is Variables<R> {
  return keysOf(rules).every((variable) => variable in values);
}

/**
 * Runs a rule between variables when every variable it reads parsed: a
 * variable that failed its own rule is already reported and must not hide
 * (or fake) a problem between the others.
 */
export function whenParsed<V, K extends keyof V>(
  values: Partial<V>,
  reads: readonly K[],
  check: (parsed: Pick<V, K>) => ConfigIssue[],
): ConfigIssue[] {
  const parsedAllOf = (v: Partial<V>): v is Partial<V> & Pick<V, K> => reads.every((key) => key in v);
  return parsedAllOf(values) ? check(values) : [];
}

/**
 * Parses a provider's settings (or any group of variables) with `rules`,
 * then runs `crossRules` on what parsed, then builds the typed settings.
 * Every issue is returned at once; `build` runs only when there is none.
 */
export function parseSettings<R extends VariableRules, S>(
  rules: R,
  env: Env,
  build: (values: Variables<R>) => S,
  crossRules: (values: Partial<Variables<R>>) => ConfigIssue[] = () => [],
): SettingsResult<S> {
  const { values, issues } = parseVariables(rules, givenVariables(env));
  issues.push(...crossRules(values));
  if (issues.length > 0 || !parsedAll(rules, values)) return { ok: false, issues };
  return { ok: true, settings: build(values) };
}

/** A whole number within [min, max] given as a string, `defaultValue` when not given. */
export function wholeNumber(defaultValue: number, min: number, max: number) {
  return z._default(
    z.pipe(
      z.pipe(z.string().check(z.trim(), z.regex(/^\d+$/, 'must be a whole number')), z.transform(Number)),
      bounded(min, max),
    ),
    defaultValue,
  );
}

/** A Secrets Manager secret, by name or ARN, as an optional variable names one. */
export function secretsManagerSecret() {
  return z.optional(
    z
      .string()
      .check(
        z.trim(),
        z.regex(
          /^([A-Za-z0-9/_+=.@-]{1,512}|arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+)$/,
          'must be a Secrets Manager secret name or ARN',
        ),
      ),
  );
}

/** Parses `a=b,c=d` into ordered pairs; empty input is no pairs. */
export function pairs(raw: string): Array<[string, string]> {
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => {
      const eq = part.indexOf('=');
      return eq < 0 ? [part, ''] : [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    });
}
