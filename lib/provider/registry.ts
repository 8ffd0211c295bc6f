import type { Env, SettingsResult } from '../config/env-parsing.ts';
import { parseDockerSettings } from './docker/settings.ts';
import { parseEcsSettings } from './ecs/settings.ts';
import { parseMockSettings } from './mock/settings.ts';
import type { ProviderContext, ProviderFactory, Providers } from './provider-factory.ts';

/**
 * The providers the functions can run pods on, chosen by `SVK_PROVIDER`.
 *
 * A provider `<name>` is two modules in `lib/provider/<name>/`:
 *
 * - `settings.ts`, light (zod and lib/config/env-parsing.ts only, never the
 *   provider's own code or npm packages): `parse<Name>Settings(env)` reads
 *   the provider's own environment variables and returns
 *   `{ ok: true, settings }` or `{ ok: false, issues }` naming every bad
 *   variable (`parseSettings` in lib/config/env-parsing.ts does the work).
 *   loadConfig runs it at cold start and reports its issues in the same
 *   ConfigError as every other variable; the settings land in
 *   `config.provider` as `{ name: '<name>', settings }`. Settings name
 *   secrets (a Secrets Manager ARN, say), never hold their values.
 * - `factory.ts`, exporting `createProviders` (the `ProviderFactory` of
 *   provider-factory.ts): builds the node and pod providers from the
 *   settings and a `ProviderContext`, reading any secret the settings
 *   name. It is loaded with a dynamic `import()` only when the provider is
 *   chosen, so the heavy code (and its npm packages) of
 *   the others is never loaded; in the packaged functions it is a separate
 *   chunk (serverless.yml, `splitting`).
 *
 * Adding a provider is its folder plus two lines here: the import of its
 * settings parser and its entry in {@link PROVIDERS}.
 */

/** A registry entry: how to read a provider's settings, and how to load its factory. */
export interface ProviderEntry<S> {
  parseSettings(env: Env): SettingsResult<S>;
  load(): Promise<ProviderFactory<S>>;
}

/** Ties a settings parser to its factory, so that both agree on the settings type. */
function entry<S>(
  parseSettings: (env: Env) => SettingsResult<S>,
  load: () => Promise<ProviderFactory<S>>,
): ProviderEntry<S> {
  return { parseSettings, load };
}

const ENTRIES = {
  mock: entry(parseMockSettings, () => import('./mock/factory.ts')),
  docker: entry(parseDockerSettings, () => import('./docker/factory.ts')),
  'ecs-fargate': entry(parseEcsSettings, () => import('./ecs/factory.ts')),
};

type SettingsOf<E> = E extends ProviderEntry<infer S> ? S : never;

/** Each provider's settings type, by name. */
export type ProviderSettingsMap = { [N in keyof typeof ENTRIES]: SettingsOf<(typeof ENTRIES)[N]> };

export type ProviderName = keyof ProviderSettingsMap;

/** Every provider, by name. Typed as a mapped type so that a name and its settings stay paired. */
export const PROVIDERS: { [N in ProviderName]: ProviderEntry<ProviderSettingsMap[N]> } = ENTRIES;

/** Provider `N` (each of them, for a union) and its settings. */
type ProviderConfigOf<N extends ProviderName> = {
  [K in N]: { name: K; settings: ProviderSettingsMap[K] };
}[N];

/** The chosen provider and its settings: `config.provider`. */
export type ProviderConfig = ProviderConfigOf<ProviderName>;

export const PROVIDER_NAMES: readonly ProviderName[] = Object.keys(PROVIDERS).filter(isProviderName);

export function isProviderName(name: string): name is ProviderName {
  return Object.hasOwn(PROVIDERS, name);
}

/** Reads the settings of provider `name` from `env`, or every issue with them. */
export function parseProviderSettings<N extends ProviderName>(
  name: N,
  env: Env,
): SettingsResult<ProviderConfigOf<N>> {
  const result = PROVIDERS[name].parseSettings(env);
  return result.ok ? { ok: true, settings: { name, settings: result.settings } } : result;
}

/** Loads the chosen provider's factory (a dynamic import) and builds its providers. */
export async function createProviders<N extends ProviderName>(
  provider: ProviderConfigOf<N>,
  context: ProviderContext,
): Promise<Providers> {
  const factory = await PROVIDERS[provider.name].load();
  return factory.createProviders(provider.settings, context);
}
