/**
 * A serverless (osls) plugin for `serverless invoke local` without a deployed
 * stack. A few environment variables are references to the stack's own
 * resources (`SVK_TABLE_NAME: !Ref StateTable`, `SVK_EVENT_BUS_NAME`,
 * `SVK_TICK_QUEUE_URL`); osls resolves such a reference by asking
 * CloudFormation for the deployed stack's resource, before it applies the
 * `--env NAME=value` options, so without AWS credentials and a stack the
 * invocation fails ("Could not resolve SVK_TABLE_NAME ... credentials not
 * found") even when `--env` names the value. With this plugin, a reference
 * that `--env` names is replaced by that value before osls resolves
 * anything; a reference it does not name is resolved from the stack as before
 * (docs/operations.md, "Invoking one function locally"). And since osls loads
 * a local handler from `.js` or `.cjs` only, the functions are bundled as
 * `.js` for `invoke local` (still ES modules, under package.json's "type").
 *
 * Plain JavaScript: osls loads plugins with Node's own loader.
 */

/** @param {unknown} v */
const isStackReference = (v) =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && ('Ref' in v || 'Fn::ImportValue' in v);

/**
 * The `--env NAME=value` options, by name (osls gives one as a string, several as a list).
 * @param {unknown} env
 * @returns {Map<string, string>}
 */
export function envOptions(env) {
  const given = new Map();
  for (const option of [env ?? []].flat()) {
    if (typeof option !== 'string') continue;
    const at = option.indexOf('=');
    if (at > 0) given.set(option.slice(0, at), option.slice(at + 1));
  }
  return given;
}

/**
 * Replaces, in each environment, the stack references `given` names by their
 * values; returns the names replaced. Mutates `environments`.
 * @param {Array<Record<string, unknown> | undefined>} environments
 * @param {Map<string, string>} given
 * @returns {string[]}
 */
export function replaceStackReferences(environments, given) {
  const replaced = new Set();
  for (const environment of environments) {
    for (const [name, value] of Object.entries(environment ?? {})) {
      const supplied = given.get(name);
      if (isStackReference(value) && supplied !== undefined && environment) {
        environment[name] = supplied;
        replaced.add(name);
      }
    }
  }
  return [...replaced].sort();
}

export default class InvokeLocalEnvPlugin {
  /**
   * Acts in its constructor, before any plugin's `initialize` hook: the
   * esbuild plugin reads its options there.
   * @param {{ processedInput?: { commands?: string[] }; service: { custom?: { esbuild?: Record<string, unknown> }; provider: { environment?: Record<string, unknown> }; functions?: Record<string, { environment?: Record<string, unknown> }> } }} serverless
   * @param {{ env?: unknown }} options
   */
  constructor(serverless, options) {
    this.hooks = {};
    if (serverless.processedInput?.commands?.join(' ') !== 'invoke local') return;
    const { custom, provider, functions } = serverless.service;
    replaceStackReferences(
      [provider.environment, ...Object.values(functions ?? {}).map((f) => f.environment)],
      envOptions(options.env),
    );
    // osls loads a local handler from `<handler>.js` or `.cjs` only, never `.mjs`. The bundles stay
    // ES modules: `.js` files under package.json's "type": "module".
    if (custom?.esbuild) custom.esbuild.outputFileExtension = '.js';
  }
}
