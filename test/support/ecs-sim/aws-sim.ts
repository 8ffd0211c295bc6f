import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { ECSClient } from '@aws-sdk/client-ecs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { EcsAwsClients } from '../../../lib/provider/ecs/aws-clients.ts';
import { ApiModel } from './api-model.ts';
import { EcsSim, type EcsSimOptions } from './ecs-sim.ts';
import { LogsSim } from './logs-sim.ts';
import { SimError } from './sim-error.ts';
import type { ContainerBehaviour } from './sim-types.ts';
import { SsmSim } from './ssm-sim.ts';

/**
 * ECS, SSM and CloudWatch Logs as one simulated AWS, spoken to on the wire
 * (AWS JSON 1.1: `X-Amz-Target: <service prefix>.<operation>`, a JSON body,
 * errors as `{ "__type", "message" }` with status 400) by the real SDK
 * clients: in process as their request handler (only the transport is
 * replaced; serialisation, retries and error parsing are the SDK's own), or
 * over loopback HTTP for functions running in another process.
 *
 * Every request is first checked against AWS's published model of its
 * operation (api-model.ts); a request that breaks it is answered with a
 * ValidationException and recorded in {@link violations}, which tests
 * require to stay empty.
 */

export interface AwsSimulationOptions {
  now?: () => number;
  region?: string;
  account?: string;
  behaviour: ContainerBehaviour;
  ecs?: Partial<Omit<EcsSimOptions, 'now' | 'region' | 'account' | 'ssm' | 'logs' | 'behaviour'>>;
  /** The clusters that exist (ACTIVE). */
  clusters?: string[];
}

interface Answer {
  status: number;
  body: string;
}

const SERVICES = {
  ecs: ApiModel.load('ecs-2014-11-13'),
  ssm: ApiModel.load('ssm-2014-11-06'),
  logs: ApiModel.load('logs-2014-03-28'),
};

export class AwsSimulation {
  readonly ecs: EcsSim;
  readonly ssm = new SsmSim();
  readonly logs = new LogsSim();
  readonly violations: string[] = [];
  readonly region: string;
  readonly account: string;
  #ticker: NodeJS.Timeout | undefined;
  #server: Server | undefined;

  constructor(options: AwsSimulationOptions) {
    this.region = options.region ?? 'eu-west-1';
    this.account = options.account ?? '123456789012';
    this.ecs = new EcsSim({
      now: options.now ?? Date.now,
      region: this.region,
      account: this.account,
      ssm: this.ssm,
      logs: this.logs,
      behaviour: options.behaviour,
      ...options.ecs,
    });
    for (const c of options.clusters ?? ['pods']) this.ecs.clusters.set(c, 'ACTIVE');
  }

  /** Answers one request as the service would. */
  answer(target: string, text: string): Answer {
    const [prefix = '', operation = ''] = target.split('.');
    const entry = Object.entries(SERVICES).find(([, model]) => model.targetPrefix === prefix);
    try {
      if (!entry) throw new SimError('UnknownOperationException', `unknown target ${target}`);
      const [service, model] = entry;
      const body: unknown = JSON.parse(text || '{}');
      const problems = model.validate(operation, body);
      if (problems.length > 0 || !isRecord(body)) {
        this.violations.push(`${target}: ${problems.join('; ')}`);
        throw new SimError('ValidationException', problems.join('; '));
      }
      const out =
        service === 'ecs'
          ? this.ecs.handle(operation, body)
          : service === 'ssm'
            ? this.ssm.handle(operation, body)
            : this.logs.handle(operation, body);
      return { status: 200, body: JSON.stringify(out) };
    } catch (err) {
      if (!(err instanceof SimError)) throw err;
      return {
        status: err.status,
        body: JSON.stringify({ __type: err.code, message: err.message, ...err.extra }),
      };
    }
  }

  /** Real SDK clients whose transport is this simulation, in process. */
  clients(): EcsAwsClients {
    const common = {
      region: this.region,
      credentials: { accessKeyId: 'simulation', secretAccessKey: 'simulation' },
      maxAttempts: 3,
      requestHandler: {
        handle: async (request: { headers: Record<string, string>; body?: unknown }) => {
          const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
          const raw = request.body;
          const text =
            raw instanceof Uint8Array
              ? new TextDecoder().decode(Uint8Array.prototype.slice.call(raw))
              : String(raw ?? '{}');
          const { status, body } = this.answer(target, text);
          return {
            response: {
              statusCode: status,
              headers: { 'content-type': 'application/x-amz-json-1.1' },
              body: Buffer.from(body),
            },
          };
        },
      },
    };
    return { ecs: new ECSClient(common), logs: new CloudWatchLogsClient(common), ssm: new SSMClient(common) };
  }

  /** Serves the simulation on a loopback port; resolves with its endpoint URL. */
  async listen(): Promise<string> {
    const server = createServer((req, res) => {
      void readBody(req).then((text) => {
        const target = String(req.headers['x-amz-target'] ?? '');
        const { status, body } = this.answer(target, text);
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#server = server;
    const { port } = server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Moves tasks along (and publishes their events) every `intervalMs` of real time. */
  startTicking(intervalMs = 100): void {
    this.#ticker ??= setInterval(() => this.ecs.tick(), intervalMs);
  }

  async close(): Promise<void> {
    if (this.#ticker) clearInterval(this.#ticker);
    this.#ticker = undefined;
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
