import { spawn } from 'node:child_process';

/** How a child process ended and everything it wrote. */
export interface ProcessOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a TypeScript script with tsx in a child Node and collects its output until it exits. */
export function runTsx(
  script: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
