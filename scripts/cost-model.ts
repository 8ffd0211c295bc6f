/**
 * `npm run cost-model -- --nodes N [--pods P]`: what N virtual nodes running
 * P pods a month cost on AWS, at each cadence, from the usage measured by
 * bench/idle-cost.ts (bench/figures/idle-cost.json) at the list prices of
 * lib/cost/prices.ts.
 *
 * Options: --cadence tick|continuous|both (default both), --no-alarms,
 * --no-dashboard, --no-metrics, --no-per-node-metrics (the fixed CloudWatch
 * costs the deployment parameters of the same names switch off),
 * --figures <file>, --json.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type Cadence,
  type CostAnswer,
  type CostFigures,
  type CostLine,
  monthlyCost,
  parseCostFigures,
} from '../lib/cost/cost-model.ts';

const root = new URL('..', import.meta.url).pathname;

function wholeNumber(raw: string | undefined, name: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value)) {
    throw new Error(`${name} must be a whole number (got "${raw}")`);
  }
  return value;
}

function options(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string' },
      pods: { type: 'string' },
      cadence: { type: 'string', default: 'both' },
      figures: { type: 'string', default: 'bench/figures/idle-cost.json' },
      'no-alarms': { type: 'boolean', default: false },
      'no-dashboard': { type: 'boolean', default: false },
      'no-metrics': { type: 'boolean', default: false },
      'no-per-node-metrics': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  if (values.nodes === undefined) throw new Error('--nodes is required: how many virtual nodes');
  const nodes = wholeNumber(values.nodes, '--nodes', 1);
  if (nodes < 1) throw new Error('--nodes must be at least 1');
  if (!['both', 'tick', 'continuous'].includes(values.cadence)) {
    throw new Error(`--cadence must be tick, continuous or both (got "${values.cadence}")`);
  }
  const cadences: Cadence[] =
    values.cadence === 'both'
      ? ['tick', 'continuous']
      : values.cadence === 'tick'
        ? ['tick']
        : ['continuous'];
  return {
    nodes,
    pods: wholeNumber(values.pods, '--pods', 0),
    cadences,
    figures: values.figures,
    alarms: !values['no-alarms'],
    dashboard: !values['no-dashboard'],
    metrics: !values['no-metrics'],
    perNodeMetrics: !values['no-metrics'] && !values['no-per-node-metrics'],
    json: values.json,
  };
}

const money = (n: number) => `$${n.toFixed(n < 1 ? 3 : 2)}`;

function lines(title: string, list: CostLine[]): string[] {
  if (list.length === 0) return [];
  const total = list.reduce((a, l) => a + l.dollars, 0);
  return [
    `  ${title}: ${money(total)}`,
    ...list.map((l) => `    ${l.item.padEnd(34)} ${money(l.dollars).padStart(10)}`),
  ];
}

function describe(cadence: Cadence, answer: CostAnswer, nodes: number, figures: CostFigures): string {
  const memory = Object.entries(figures.cadences[cadence].memoryMb)
    .map(([fn, mb]) => `${fn} ${mb} MB`)
    .join(', ');
  return [
    `${cadence} (${answer.deployments} deployment${answer.deployments > 1 ? 's' : ''}; ${memory}): ${money(answer.total)} a month, ${money(answer.total / nodes)} per node`,
    ...lines('functions, queue, table, logs at idle', answer.idle),
    ...lines('pods', answer.pods),
    ...lines('CloudWatch alarms, dashboard, metrics (switchable off)', answer.fixed),
    `  Kubernetes API requests: ${(answer.kubeRequestsPerMonth / 1e6).toFixed(2)} million a month`,
  ].join('\n');
}

function main(): void {
  const o = options(process.argv.slice(2));
  const figures = parseCostFigures(JSON.parse(readFileSync(join(root, o.figures), 'utf8')));
  const answers = o.cadences.map((cadence) => ({
    cadence,
    answer: monthlyCost(figures, {
      cadence,
      nodes: o.nodes,
      podsPerMonth: o.pods,
      alarms: o.alarms,
      dashboard: o.dashboard,
      metrics: o.metrics,
      perNodeMetrics: o.perNodeMetrics,
    }),
  }));
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ nodes: o.nodes, pods: o.pods, answers }, null, 2)}\n`);
    return;
  }
  const out = [
    `${o.nodes} node${o.nodes > 1 ? 's' : ''}, ${o.pods} pods a month, AWS list prices of lib/cost/prices.ts`,
    `usage measured ${figures.measured.at} on ${figures.measured.machine} (${figures.measured.command})`,
    '',
    ...answers.map(({ cadence, answer }) => describe(cadence, answer, o.nodes, figures)),
  ];
  if (answers.length === 2) {
    const [a, b] = answers;
    if (a && b) {
      const cheaper = a.answer.total <= b.answer.total ? a : b;
      out.push('', `cheaper: ${cheaper.cadence} (--param cadence=${cheaper.cadence})`);
    }
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

try {
  main();
} catch (err) {
  process.stderr.write(`cost-model: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
}
