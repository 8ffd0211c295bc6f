import { AgentEngine } from './agent-engine.ts';
import { ProberAgent } from './prober-agent.ts';
import { REPORT_PATH } from './prober-report.ts';

/**
 * The prober's entry, bundled into the script its container runs
 * (prober-script.ts): its settings come from the container's environment,
 * which the provider sets (prober-container.ts).
 */
const env = process.env;
const required = (name: string): string => {
  const value = env[name];
  if (!value) {
    process.stderr.write(`svk prober: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
};

const agent = new ProberAgent({
  engine: new AgentEngine(required('SVK_PROBER_SOCKET')),
  node: required('SVK_PROBER_NODE'),
  network: required('SVK_PROBER_NETWORK'),
  script: required('SVK_PROBER_SCRIPT'),
  reportPath: REPORT_PATH,
  log: (line) => process.stdout.write(`${JSON.stringify(line)}\n`),
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    agent.stop();
    process.exit(0);
  });
}
await agent.start();
