import { spawn } from 'node:child_process';

/** What a Python script did: its exit status and its two streams, apart. */
export interface PythonRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `script` (`python -c`) with the venv's interpreter and `env` over this process's environment. */
export function runPython(python: string, script: string, env: Record<string, string | undefined>): Promise<PythonRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-c', script], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** The script's standard output; an exit other than 0 is an error carrying what it wrote. */
export async function pythonOutput(python: string, script: string, env: Record<string, string | undefined>): Promise<string> {
  const run = await runPython(python, script, env);
  if (run.status !== 0) throw new Error(`python exited ${String(run.status)}: ${run.stderr}\n${run.stdout}`);
  return run.stdout;
}
