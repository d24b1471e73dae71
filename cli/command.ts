import { parseArgs, type ParseArgsConfig } from 'node:util';
import { z } from 'zod';
import { microsToDecimal, usdToMicros } from '../domain/money';
import type { Config, EnvLookup } from '../infra/config';
import type { Logger } from '../infra/log';
import type { SecretBox } from '../infra/secret-box';
import type { Principal } from '../operations/principal';
import type { CliResources } from './connect';

/** The typed command registry every `quorum` command is declared with: options parsed and validated before anything connects. */
// Deliberately, each command is declared whole (name, usage, options, input, run) even where two look alike: a
// command reads top to bottom as its help text does, and the likeness `duplicates` finds is this registry's shape.

/** Bad arguments: reported with the command's usage and exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message);
  }
}

/** Every command acts as the operator, who may act on any organisation. */
export const OPERATOR: Principal & { via: 'operator' } = { via: 'operator' };

export interface CommandContext {
  resources: CliResources;
  log: Logger;
  config: Config;
  /** Seals what the commands store secret (provider keys, the authorization server's keys). */
  box: SecretBox;
  /** The variables the engines read by name (provider keys, the engines file's key variables), as cli/main found them. */
  variable: EnvLookup;
}

/** `json` is the one object printed with `--json`; `text` the human-readable rendering. */
export interface CommandOutput {
  json: Record<string, unknown>;
  text: string;
  /** 1 when the command answered but the answer is a refusal (e.g. a spec that fails validation); default 0. */
  exitCode?: number;
}

export interface Invocation {
  json: boolean;
  run(ctx: CommandContext): Promise<CommandOutput>;
}

export interface Command {
  name: string;
  usage: string;
  parse(args: string[]): Invocation;
}

interface CommandSpec<T> {
  name: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** Takes positional arguments, validated as `files`. */
  positionals?: boolean;
  /** Validates parseArgs' values (keys are the option names), so every check happens before anything connects. */
  input: z.ZodType<T>;
  run(input: T, ctx: CommandContext): Promise<CommandOutput>;
}

export function command<T>(spec: CommandSpec<T>): Command {
  const usage = `usage: quorum ${spec.name} ${spec.usage} [--json]`;
  return {
    name: spec.name,
    usage,
    parse(args) {
      let values: Record<string, unknown>;
      let positionals: string[];
      try {
        ({ values, positionals } = parseArgs({
          args,
          options: { ...spec.options, json: { type: 'boolean' } },
          strict: true,
          allowPositionals: spec.positionals === true,
        }));
      } catch (err) {
        throw new UsageError((err as Error).message, usage);
      }
      const { json, ...rest } = values;
      const parsed = spec.input.safeParse(spec.positionals ? { ...rest, files: positionals } : rest);
      if (!parsed.success) {
        throw new UsageError(
          parsed.error.issues.map((i) => (i.path.length ? `--${i.path.join('.')} ${i.message}` : i.message)).join('; '),
          usage,
        );
      }
      return { json: json === true, run: (ctx) => spec.run(parsed.data, ctx) };
    },
  };
}

export const required = z.string({ error: 'is required' }).trim().min(1, 'must not be empty');
const usdAtLeast = (min: bigint, refusal: string) =>
  required.transform((text, ctx) => {
    try {
      const micros = usdToMicros(text);
      if (micros >= min) return micros;
      ctx.addIssue({ code: 'custom', message: refusal });
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a USD amount with at most 6 decimals, e.g. 12.50' });
    }
    return z.NEVER;
  });
export const usd = usdAtLeast(1n, 'must be a positive amount');
/** A limit, which may be nothing at all. */
export const usdOrZero = usdAtLeast(0n, 'must not be negative');
export const list = <T>(item: z.ZodType<T, string>) =>
  required.transform((text) => text.split(',').map((s) => s.trim())).pipe(z.array(item).min(1));

export const dollars = (micros: bigint): string => `$${microsToDecimal(micros)}`;
