import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  AssignPublicIp,
  Compatibility,
  ContainerCondition,
  CPUArchitecture,
  DesiredStatus,
  LaunchType,
  LogDriver,
  NetworkMode,
  OSFamily,
  PidMode,
  TaskField,
  TransportProtocol,
} from '@aws-sdk/client-ecs';
import { ParameterTier, ParameterType } from '@aws-sdk/client-ssm';

/**
 * AWS's published API models, as the npm package `aws-sdk` (v2) ships them
 * (`apis/<service>-<version>.min.json`), used to check every request the
 * provider sends before the simulation answers it: the simulation is
 * written by the provider's author, the model is not. A request is checked
 * on the wire, as the service receives it (AWS JSON 1.1: timestamps as epoch
 * seconds, blobs as base64): every member known to the operation's input
 * shape, every required member present, every value of its shape's type.
 *
 * The min models carry no enums or length limits; the enums come from the
 * v3 SDK's generated constants (generated from the same Smithy models), for
 * the fields the provider sends, listed by path in {@link ENUMS}.
 */

type Shape = {
  type?: string;
  shape?: string;
  members?: Record<string, Shape>;
  required?: string[];
  member?: Shape;
  key?: Shape;
  value?: Shape;
};

interface ModelFile {
  metadata: { targetPrefix: string; jsonVersion: string };
  operations: Record<string, { input?: Shape }>;
  shapes: Record<string, Shape>;
}

const values = (o: Record<string, string>) => Object.values(o);

/** Enum-valued fields by operation and path (`[]` for list members). */
const ENUMS: Record<string, Record<string, readonly string[]>> = {
  RunTask: {
    launchType: values(LaunchType),
    'networkConfiguration.awsvpcConfiguration.assignPublicIp': values(AssignPublicIp),
    propagateTags: ['TASK_DEFINITION', 'SERVICE', 'NONE'],
  },
  RegisterTaskDefinition: {
    networkMode: values(NetworkMode),
    'requiresCompatibilities[]': values(Compatibility),
    pidMode: values(PidMode),
    'runtimePlatform.operatingSystemFamily': values(OSFamily),
    'runtimePlatform.cpuArchitecture': values(CPUArchitecture),
    'containerDefinitions[].portMappings[].protocol': values(TransportProtocol),
    'containerDefinitions[].dependsOn[].condition': values(ContainerCondition),
    'containerDefinitions[].logConfiguration.logDriver': values(LogDriver),
  },
  DescribeTasks: { 'include[]': values(TaskField) },
  ListTasks: { desiredStatus: values(DesiredStatus), launchType: values(LaunchType) },
  DescribeClusters: { 'include[]': ['ATTACHMENTS', 'CONFIGURATIONS', 'SETTINGS', 'STATISTICS', 'TAGS'] },
  PutParameter: { Type: values(ParameterType), Tier: values(ParameterTier) },
};

export class ApiModel {
  private constructor(
    readonly service: string,
    private readonly model: ModelFile,
  ) {}

  /** Loads `apis/<file>.min.json` from the installed aws-sdk package. */
  static load(file: 'ecs-2014-11-13' | 'ssm-2014-11-06' | 'logs-2014-03-28'): ApiModel {
    const require = createRequire(import.meta.url);
    const path = require.resolve(`aws-sdk/apis/${file}.min.json`);
    const parsed: ModelFile = JSON.parse(readFileSync(path, 'utf8'));
    return new ApiModel(file, parsed);
  }

  /** The `X-Amz-Target` prefix of the service (`AmazonEC2ContainerServiceV20141113`...). */
  get targetPrefix(): string {
    return this.model.metadata.targetPrefix;
  }

  hasOperation(operation: string): boolean {
    return Object.hasOwn(this.model.operations, operation);
  }

  /** Every way `body` (as sent on the wire) breaks the operation's input shape; empty when it conforms. */
  validate(operation: string, body: unknown): string[] {
    const op = this.model.operations[operation];
    if (!op) return [`${operation} is not an operation of ${this.service}`];
    const problems: string[] = [];
    this.check(op.input ?? { type: 'structure', members: {} }, body, operation, '', problems);
    return problems;
  }

  private resolve(shape: Shape): Shape {
    let s = shape;
    const seen = new Set<string>();
    while (s.shape) {
      if (seen.has(s.shape)) break;
      seen.add(s.shape);
      const next = this.model.shapes[s.shape];
      if (!next) break;
      s = { ...next, ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== 'shape')) };
    }
    return s;
  }

  private check(raw: Shape, value: unknown, operation: string, path: string, problems: string[]): void {
    const shape = this.resolve(raw);
    const at = path || '(input)';
    const type = shape.type ?? 'string';
    const allowed = ENUMS[operation]?.[path];
    switch (type) {
      case 'structure': {
        if (!isObject(value)) return void problems.push(`${at}: must be an object`);
        const members = shape.members ?? {};
        for (const name of shape.required ?? [])
          if (value[name] === undefined || value[name] === null)
            problems.push(`${join(path, name)}: is required`);
        for (const [name, v] of Object.entries(value)) {
          const member = members[name];
          if (!member) problems.push(`${join(path, name)}: is not a member of the input`);
          else if (v !== null && v !== undefined)
            this.check(member, v, operation, join(path, name), problems);
        }
        return;
      }
      case 'list':
        if (!Array.isArray(value)) return void problems.push(`${at}: must be a list`);
        for (const item of value) this.check(shape.member ?? {}, item, operation, `${path}[]`, problems);
        return;
      case 'map':
        if (!isObject(value)) return void problems.push(`${at}: must be a map`);
        for (const v of Object.values(value))
          this.check(shape.value ?? {}, v, operation, `${path}{}`, problems);
        return;
      case 'integer':
      case 'long':
        if (typeof value !== 'number' || !Number.isInteger(value)) problems.push(`${at}: must be an integer`);
        return;
      case 'float':
      case 'double':
        if (typeof value !== 'number') problems.push(`${at}: must be a number`);
        return;
      case 'boolean':
        if (typeof value !== 'boolean') problems.push(`${at}: must be a boolean`);
        return;
      case 'timestamp':
        if (typeof value !== 'number') problems.push(`${at}: must be a timestamp (epoch seconds)`);
        return;
      case 'blob':
        if (typeof value !== 'string') problems.push(`${at}: must be base64 text`);
        return;
      default:
        if (typeof value !== 'string') return void problems.push(`${at}: must be a string`);
        if (allowed && !allowed.includes(value))
          problems.push(`${at}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
    }
  }
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
