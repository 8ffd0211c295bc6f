/**
 * A serverless (osls) plugin that decides the template's CloudFormation
 * Conditions at package time. infra/*.yml states what exists under which
 * configuration with named Conditions (`HasKubeletApi`, `IsEcsFargate`, ...),
 * but their operands are stage parameters (`${param:...}`) that the framework
 * has already replaced with values: every such Condition is a constant by the
 * time the template is written. Left in the template, CloudFormation would
 * decide them the same way at deploy time, while cfn-lint (which evaluates
 * every branch) reports the branch that cannot be taken: an empty ARN, an
 * empty alarm action, a comparison that is always true.
 *
 * So this plugin folds them, after the framework has merged `resources` (and
 * their `extensions`) into the compiled template and before it is saved: a
 * resource or output whose Condition is false is left out, `Fn::If` takes its
 * branch, `Ref: AWS::NoValue` leaves its list item or property out, and the
 * decided Conditions go. A Condition that depends on something only known at
 * deploy time (a real CloudFormation parameter, a pseudo parameter) stays as
 * it is. The template that is written is the one that is deployed
 * (`serverless deploy` packages first), so what exists is decided by the same
 * parameters as before.
 *
 * A combination of parameters the product cannot run with is refused here,
 * naming what to set: the template's `Metadata.PackageRefusals` maps a
 * Condition to its message, and packaging fails when that Condition is
 * true (one that is not decided at package time fails packaging too). The
 * entry does not reach the written template.
 *
 * Plain JavaScript: osls loads plugins with Node's own loader.
 */

const NO_VALUE = Symbol('AWS::NoValue');

/** @param {unknown} v */
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** @param {unknown} v */
const isLiteral = (v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/**
 * The value of a Condition expression when it is a constant, else undefined.
 * CloudFormation compares Fn::Equals operands as strings (true equals "true").
 * @param {unknown} expr
 * @param {(name: string) => boolean | undefined} condition
 * @returns {boolean | undefined}
 */
function evaluate(expr, condition) {
  if (!isObject(expr)) return undefined;
  const [key, ...rest] = Object.keys(expr);
  if (key === undefined || rest.length > 0) return undefined;
  const args = expr[key];
  if (key === 'Condition') return typeof args === 'string' ? condition(args) : undefined;
  if (!Array.isArray(args)) return undefined;
  if (key === 'Fn::Equals') {
    const [a, b] = args;
    return args.length === 2 && isLiteral(a) && isLiteral(b) ? String(a) === String(b) : undefined;
  }
  const values = args.map((a) => evaluate(a, condition));
  if (key === 'Fn::Not') return values.length === 1 && values[0] !== undefined ? !values[0] : undefined;
  if (key === 'Fn::And') {
    if (values.includes(false)) return false;
    return values.includes(undefined) ? undefined : true;
  }
  if (key === 'Fn::Or') {
    if (values.includes(true)) return true;
    return values.includes(undefined) ? undefined : false;
  }
  return undefined;
}

/**
 * Every Condition of `conditions` that is a constant, by name.
 * @param {Record<string, unknown>} conditions
 * @returns {Map<string, boolean>}
 */
export function decideConditions(conditions) {
  /** @type {Map<string, boolean | undefined>} */
  const decided = new Map();
  /** @type {Set<string>} */
  const visiting = new Set();
  /** @param {string} name */
  const condition = (name) => {
    if (decided.has(name)) return decided.get(name);
    if (!(name in conditions)) throw new Error(`Condition ${name} is used but not defined`);
    if (visiting.has(name)) throw new Error(`Condition ${name} refers to itself`);
    visiting.add(name);
    const value = evaluate(conditions[name], condition);
    visiting.delete(name);
    decided.set(name, value);
    return value;
  };
  for (const name of Object.keys(conditions)) condition(name);
  return new Map(/** @type {Array<[string, boolean]>} */ ([...decided].filter(([, v]) => v !== undefined)));
}

/**
 * `value` with every decided Fn::If replaced by its branch and every
 * `Ref: AWS::NoValue` left out of its list or object (NO_VALUE when `value`
 * itself is one).
 * @param {unknown} value
 * @param {Map<string, boolean>} decided
 * @returns {unknown}
 */
function fold(value, decided) {
  if (Array.isArray(value)) {
    return value.map((v) => fold(v, decided)).filter((v) => v !== NO_VALUE);
  }
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === 'Ref' && value.Ref === 'AWS::NoValue') return NO_VALUE;
  if (keys.length === 1 && keys[0] === 'Fn::If') {
    const args = value['Fn::If'];
    if (Array.isArray(args) && args.length === 3 && typeof args[0] === 'string') {
      if (decided.has(args[0])) return fold(decided.get(args[0]) ? args[1] : args[2], decided);
      // Decided at deploy time: either branch may still be AWS::NoValue.
      const branch = (/** @type {unknown} */ b) => {
        const folded = fold(b, decided);
        return folded === NO_VALUE ? { Ref: 'AWS::NoValue' } : folded;
      };
      return { 'Fn::If': [args[0], branch(args[1]), branch(args[2])] };
    }
  }
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const key of keys) {
    const folded = fold(value[key], decided);
    if (folded !== NO_VALUE) out[key] = folded;
  }
  return out;
}

/**
 * `expr` with each decided `Condition: name` written as a constant comparison.
 * @param {unknown} expr
 * @param {Map<string, boolean>} decided
 * @returns {unknown}
 */
function inlineConditions(expr, decided) {
  if (Array.isArray(expr)) return expr.map((e) => inlineConditions(e, decided));
  if (!isObject(expr)) return expr;
  if (typeof expr.Condition === 'string' && decided.has(expr.Condition)) {
    return { 'Fn::Equals': ['true', String(decided.get(expr.Condition))] };
  }
  return Object.fromEntries(Object.entries(expr).map(([k, v]) => [k, inlineConditions(v, decided)]));
}

/**
 * The logical ids `value` refers to: Ref, Fn::GetAtt, Fn::Sub's `${Id}` and
 * `${Id.Attr}` (not its own variables, nor `${!Literal}`).
 * @param {unknown} value
 * @param {Set<string>} into
 */
function references(value, into) {
  if (Array.isArray(value)) {
    for (const v of value) references(v, into);
    return into;
  }
  if (!isObject(value)) return into;
  for (const [key, v] of Object.entries(value)) {
    if (key === 'Ref' && typeof v === 'string') into.add(v);
    else if (key === 'Fn::GetAtt') {
      const target = Array.isArray(v) ? v[0] : typeof v === 'string' ? v.split('.')[0] : undefined;
      if (typeof target === 'string') into.add(target);
    } else if (key === 'Fn::Sub') {
      const [text, variables] = Array.isArray(v) ? v : [v, {}];
      if (typeof text === 'string') {
        for (const m of text.matchAll(/\$\{([^!}][^}.]*)(?:\.[^}]*)?\}/g)) {
          const id = m[1] ?? '';
          if (!(isObject(variables) && id in variables)) into.add(id);
        }
      }
      references(variables, into);
    } else references(v, into);
  }
  return into;
}

/**
 * @typedef {{ Conditions?: Record<string, unknown>; Resources?: Record<string, Record<string, unknown>>; Outputs?: Record<string, Record<string, unknown>>; [key: string]: unknown }} Template
 */

/**
 * The template with its constant Conditions decided: what it leaves out and
 * what it keeps. Pure. Throws, naming it, when something that stays refers to
 * a resource left out (CloudFormation would refuse that template too).
 * @param {Template} template
 * @returns {{ template: Template; removed: string[]; decided: Map<string, boolean> }}
 */
export function foldConditions(template) {
  const decided = decideConditions(template.Conditions ?? {});
  /** @type {string[]} */
  const removed = [];
  /**
   * @param {Record<string, Record<string, unknown>> | undefined} section
   * @param {string} kind
   */
  const foldSection = (section, kind) => {
    if (!section) return undefined;
    /** @type {Record<string, Record<string, unknown>>} */
    const out = {};
    for (const [id, entry] of Object.entries(section)) {
      const name = entry.Condition;
      if (typeof name === 'string' && decided.has(name)) {
        if (!decided.get(name)) {
          removed.push(`${kind}/${id}`);
          continue;
        }
        const { Condition: _decided, ...rest } = entry;
        out[id] = /** @type {Record<string, unknown>} */ (fold(rest, decided));
      } else out[id] = /** @type {Record<string, unknown>} */ (fold(entry, decided));
    }
    return out;
  };
  refuse(template, decided);
  const resources = foldSection(template.Resources, 'Resources');
  const outputs = foldSection(template.Outputs, 'Outputs');

  const gone = new Set(removed.filter((r) => r.startsWith('Resources/')).map((r) => r.slice(10)));
  for (const [kind, section] of /** @type {const} */ ([
    ['Resources', resources],
    ['Outputs', outputs],
  ])) {
    for (const [id, entry] of Object.entries(section ?? {})) {
      const refs = references(entry, new Set());
      const dependsOn = entry.DependsOn;
      for (const d of Array.isArray(dependsOn) ? dependsOn : dependsOn ? [dependsOn] : [])
        refs.add(String(d));
      for (const ref of refs) {
        if (gone.has(ref)) {
          throw new Error(`${kind}/${id} refers to ${ref}, which its Condition leaves out of this template`);
        }
      }
    }
  }

  /** @type {Record<string, unknown>} */
  const conditions = {};
  for (const [name, expr] of Object.entries(template.Conditions ?? {})) {
    // One that stays keeps its meaning where it names one that goes.
    if (!decided.has(name)) conditions[name] = inlineConditions(expr, decided);
  }
  /** @type {Template} */
  const out = { ...template };
  if (resources) out.Resources = resources;
  if (outputs && Object.keys(outputs).length > 0) out.Outputs = outputs;
  else delete out.Outputs;
  if (Object.keys(conditions).length > 0) out.Conditions = conditions;
  else delete out.Conditions;
  if (isObject(template.Metadata) && 'PackageRefusals' in template.Metadata) {
    const { PackageRefusals: _checked, ...metadata } = template.Metadata;
    if (Object.keys(metadata).length > 0) out.Metadata = metadata;
    else delete out.Metadata;
  }
  return { template: out, removed, decided };
}

/**
 * Fails packaging with the message of each `Metadata.PackageRefusals` entry
 * whose Condition is true.
 * @param {Template} template
 * @param {Map<string, boolean>} decided
 */
function refuse(template, decided) {
  const refusals = isObject(template.Metadata) ? template.Metadata.PackageRefusals : undefined;
  if (!isObject(refusals)) return;
  const messages = [];
  for (const [name, message] of Object.entries(refusals)) {
    if (!decided.has(name))
      throw new Error(`PackageRefusals names ${name}, which is not a Condition decided at package time`);
    if (decided.get(name)) messages.push(String(message));
  }
  if (messages.length > 0) throw new Error(`this configuration cannot be packaged: ${messages.join('; ')}`);
}

/** The osls plugin: folds the compiled template after `resources` are merged into it, before it is saved. */
export default class FoldConditionsPlugin {
  /** @param {{ service: { provider: { compiledCloudFormationTemplate: Template } } }} serverless */
  constructor(serverless) {
    this.hooks = {
      'after:aws:package:finalize:mergeCustomProviderResources': () => {
        const { provider } = serverless.service;
        provider.compiledCloudFormationTemplate = foldConditions(
          provider.compiledCloudFormationTemplate,
        ).template;
      },
    };
  }
}
