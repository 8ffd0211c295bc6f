/** Types of scripts/fold-conditions.mjs (plain JavaScript, which osls loads as a plugin). */
export interface Template {
  Conditions?: Record<string, unknown>;
  Resources?: Record<string, Record<string, unknown>>;
  Outputs?: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

export function decideConditions(conditions: Record<string, unknown>): Map<string, boolean>;

export function foldConditions(template: Template): {
  template: Template;
  removed: string[];
  decided: Map<string, boolean>;
};

export default class FoldConditionsPlugin {
  constructor(serverless: { service: { provider: { compiledCloudFormationTemplate: Template } } });
  hooks: Record<string, () => void>;
}
