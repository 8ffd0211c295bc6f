/** Types of scripts/invoke-local-env.mjs (plain JavaScript, which osls loads as a plugin). */
export function envOptions(env: unknown): Map<string, string>;

export function replaceStackReferences(
  environments: Array<Record<string, unknown> | undefined>,
  given: Map<string, string>,
): string[];

export default class InvokeLocalEnvPlugin {
  constructor(
    serverless: {
      processedInput?: { commands?: string[] };
      service: {
        custom?: { esbuild?: Record<string, unknown> };
        provider: { environment?: Record<string, unknown> };
        functions?: Record<string, { environment?: Record<string, unknown> }>;
      };
    },
    options: { env?: unknown },
  );
  hooks: Record<string, () => void>;
}
