import { SimError } from './sim-error.ts';

/**
 * SSM Parameter Store, the part the provider and ECS's agent use:
 * PutParameter (a SecureString of the standard tier holds up to 4 KB;
 * ParameterAlreadyExists without Overwrite), DeleteParameter
 * (ParameterNotFound), and the agent's read of a task's secrets.
 */
export class SsmSim {
  readonly parameters = new Map<string, { value: string; type: string; version: number }>();
  readonly calls: Record<string, number> = {};
  readonly #lostAnswers = new Map<string, number>();

  /**
   * The next `count` calls of `operation` are carried out, and their answer
   * (whatever it was) is lost: the caller sees a 500, as when the function
   * dies right after the call reached SSM.
   */
  loseAnswers(operation: string, count: number): void {
    this.#lostAnswers.set(operation, (this.#lostAnswers.get(operation) ?? 0) + count);
  }

  handle(operation: string, body: Record<string, unknown>): Record<string, unknown> {
    this.calls[operation] = (this.calls[operation] ?? 0) + 1;
    const lost = this.#lostAnswers.get(operation) ?? 0;
    if (lost === 0) return this.#operation(operation, body);
    this.#lostAnswers.set(operation, lost - 1);
    try {
      this.#operation(operation, body);
    } catch {
      // Lost with the rest of the answer.
    }
    throw new SimError('InternalServerError', 'An error occurred on the server side.', 500);
  }

  #operation(operation: string, body: Record<string, unknown>): Record<string, unknown> {
    const name = typeof body.Name === 'string' ? body.Name : '';
    switch (operation) {
      case 'PutParameter': {
        const value = typeof body.Value === 'string' ? body.Value : '';
        // Parameter names: letters, numbers and . - _ / ; a path starts with /, at most 15 levels, 1011 characters.
        if (!/^[A-Za-z0-9_.\-/]{1,1011}$/.test(name) || name.split('/').length > 16)
          throw new SimError('ValidationException', `parameter name ${name} is not valid`);
        // Standard tier: values up to 4 KB.
        if (Buffer.byteLength(value) > 4096)
          throw new SimError('ValidationException', 'value over 4 KB (standard tier)');
        const existing = this.parameters.get(name);
        if (existing && body.Overwrite !== true)
          throw new SimError(
            'ParameterAlreadyExists',
            'The parameter already exists. To overwrite this value, set the overwrite option in the request to true.',
          );
        const version = (existing?.version ?? 0) + 1;
        this.parameters.set(name, { value, type: String(body.Type ?? 'String'), version });
        return { Version: version, Tier: 'Standard' };
      }
      case 'DeleteParameter':
        if (!this.parameters.delete(name))
          throw new SimError('ParameterNotFound', `Parameter ${name} not found.`);
        return {};
      default:
        throw new SimError('UnknownOperationException', `the simulation does not implement SSM ${operation}`);
    }
  }

  /** What ECS's agent reads for a task's `secrets` (with the execution role); undefined when missing. */
  read(nameOrArn: string): string | undefined {
    const name = nameOrArn.startsWith('arn:')
      ? nameOrArn.replace(/^arn:[^:]+:ssm:[^:]+:\d+:parameter/, '')
      : nameOrArn;
    return this.parameters.get(name)?.value;
  }
}
