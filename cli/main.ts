// cli/: the `quorum` operator command, a typed registry of commands (commands.ts) over operations and db/.
import { QuorumError } from '../domain/errors';
import type { Refusal } from '../domain/mode-validation-codes';
import { refusalLine } from './mode-commands';
import { envLookup, loadConfig } from '../infra/config';
import { createLogger } from '../infra/log';
import { redact } from '../infra/redact';
import { deferredSecretBox } from '../infra/secret-box';
import { COMMANDS, UsageError, type Command } from './commands';
import { openResources } from './connect';

const OVERVIEW = [
  'usage: quorum <command> [options] [--json]',
  '',
  'commands:',
  ...COMMANDS.map((c) => `  ${c.usage.replace(/^usage: quorum /, '')}`),
].join('\n');

function findCommand(argv: string[]): { command: Command; args: string[] } {
  const [group, action, ...args] = argv;
  // A command of one word (`quorum audit`) takes every argument after it.
  const single = COMMANDS.find((c) => c.name === group);
  if (single) return { command: single, args: argv.slice(1) };
  const command = COMMANDS.find((c) => c.name === `${group} ${action}`);
  if (!command)
    throw new UsageError(group ? `unknown command: ${[group, action].filter(Boolean).join(' ')}` : 'no command given', OVERVIEW);
  return { command, args };
}

/** Exit codes: 0 done, 1 the operation failed, 2 bad arguments. */
async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(OVERVIEW + '\n');
    return argv.length === 0 ? 2 : 0;
  }
  const { command, args } = findCommand(argv);
  if (args.includes('--help')) {
    process.stdout.write(command.usage + '\n');
    return 0;
  }
  const invocation = command.parse(args);
  const log = createLogger('cli');
  const config = loadConfig();
  const resources = await openResources(config, log);
  try {
    // The box is opened by the commands that seal (byok set, oauth rotate-keys) only: the others need no master key.
    const output = await invocation.run({ resources, log, config, box: deferredSecretBox(config), variable: envLookup() });
    process.stdout.write((invocation.json ? JSON.stringify(output.json) : output.text) + '\n');
    return output.exitCode ?? 0;
  } catch (err) {
    // With --json a refusal is also JSON on stdout, in the MCP tools' shape: {error: {code, message}, svc}.
    if (invocation.json && err instanceof QuorumError)
      process.stdout.write(JSON.stringify({ error: { code: err.code, message: err.message }, svc: err.detail ?? {} }) + '\n');
    throw err;
  } finally {
    await resources.close();
  }
}

function report(err: unknown): number {
  if (err instanceof UsageError) {
    process.stderr.write(`quorum: ${err.message}\n${err.usage ? `\n${err.usage}\n` : ''}`);
    return 2;
  }
  const message = err instanceof QuorumError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
  const refusals = err instanceof QuorumError && Array.isArray(err.detail?.refusals) ? (err.detail.refusals as Refusal[]) : [];
  process.stderr.write(`quorum: ${redact(message)}\n${refusals.map((r) => `  ${refusalLine(r)}\n`).join('')}`);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => (process.exitCode = report(err)),
);
