import { type Env, parseSettings, type SettingsResult } from '../../config/env-parsing.ts';

/**
 * The mock provider has no variables of its own: it keeps its pods in the
 * state table and reads the node settings every provider gets. A provider
 * with variables lists them here, each with its rule and default, e.g.
 * `{ DOCKER_HOST: z.string().default('unix:///var/run/docker.sock') }`.
 */
const MOCK_VARIABLES = {};

export type MockSettings = Readonly<Record<string, never>>;

export function parseMockSettings(env: Env): SettingsResult<MockSettings> {
  return parseSettings(MOCK_VARIABLES, env, () => ({}));
}
