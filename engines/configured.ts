import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ENGINE_ID, TIERS } from '../domain/modes';
import type { Config, EnvLookup } from '../infra/config';
import { registerSecret } from '../infra/redact';
import type { ApiKeyConfig } from './credentials';
import type { EngineSpec, Family } from './types';

/**
 * Engines declared in the file QUORUM_ENGINES_FILE names (YAML, or JSON by a `.json` name), beside the built-in
 * catalog: any number of OpenAI-compatible servers (llama.cpp, vLLM, Ollama, a gateway), or models the catalog does
 * not name yet on the Anthropic, Gemini and Bedrock protocols. Read and checked once at start: a wrong file stops
 * the process with every problem named by entry and field. The format is in docs/engines.md.
 */

/** A configured engine: its spec, and where and with what its calls go. */
export interface ConfiguredEngine {
  spec: EngineSpec;
  /** The endpoint; undefined only for `bedrock` (the AWS SDK's, or QUORUM_BEDROCK_ENDPOINT). */
  baseUrl?: string;
  /** The environment variable that holds its key; undefined for a keyless server and for `bedrock` (AWS credentials). */
  apiKeyEnv?: string;
}

const PROTOCOLS = ['openai', 'anthropic', 'google', 'bedrock'] as const satisfies readonly Family[];

const usdPerMtok = z.number({ error: 'must be a number (USD per million tokens)' }).finite().nonnegative('must be 0 or more');
const tokens = z.number({ error: 'must be a whole number of tokens' }).int('must be a whole number of tokens').positive('must be above 0');

const Entry = z
  .strictObject({
    id: z.string({ error: 'is required' }).regex(ENGINE_ID, 'must be family/name, the family in lowercase letters, digits and -'),
    protocol: z.enum(PROTOCOLS, { error: `must be one of ${PROTOCOLS.join(', ')}` }),
    base_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable (the key itself never goes in the file)')
      .optional(),
    model: z.string({ error: 'is required' }).min(1, 'must not be empty'),
    maker: z
      .string()
      .regex(/^[a-z0-9-]+$/, 'must be lowercase letters, digits and -')
      .optional(),
    tier: z.enum(TIERS, { error: `must be one of ${TIERS.join(', ')}` }),
    input_usd_per_mtok: usdPerMtok,
    output_usd_per_mtok: usdPerMtok,
    context_tokens: tokens,
    max_output_tokens: tokens,
    backup: z.string({ error: 'is required' }).regex(ENGINE_ID, 'must be an engine id (family/name)'),
    reasoning: z.boolean({ error: 'must be true or false' }).default(false),
    structured_output: z.boolean({ error: 'must be true or false' }).default(true),
    hedging: z.boolean({ error: 'must be true or false' }).default(true),
    concurrency: z.number().int('must be a whole number').positive('must be above 0').optional(),
  })
  .superRefine((e, ctx) => {
    if (e.protocol === 'bedrock') {
      if (e.api_key_env !== undefined)
        ctx.addIssue({ code: 'custom', path: ['api_key_env'], message: 'bedrock engines use the service AWS credentials, not a key' });
    } else if (e.base_url === undefined) {
      ctx.addIssue({ code: 'custom', path: ['base_url'], message: `is required for protocol ${e.protocol}` });
    }
    if (e.max_output_tokens > e.context_tokens)
      ctx.addIssue({ code: 'custom', path: ['max_output_tokens'], message: 'must not exceed context_tokens' });
    if (e.backup === e.id) ctx.addIssue({ code: 'custom', path: ['backup'], message: 'must be another engine, not itself' });
  });

const File = z.strictObject(
  { engines: z.array(z.unknown(), { error: 'must be a list' }) },
  { error: 'must hold a mapping with an `engines` list' },
);

/** Thrown for a file that cannot be used; the message names every problem, one per line. */
export class EnginesFileError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.map((p) => `QUORUM_ENGINES_FILE ${p}`).join('\n'));
    this.name = 'EnginesFileError';
  }
}

/** The engines of QUORUM_ENGINES_FILE (none when it is unset); throws EnginesFileError for a file that cannot be used. */
export function readEnginesFile(file: Config['QUORUM_ENGINES_FILE'], builtIn: ReadonlyMap<string, EngineSpec>): ConfiguredEngine[] {
  if (!file) return [];
  let text: string;
  try {
    text = fs.readFileSync(path.resolve(file), 'utf8');
  } catch (err) {
    throw new EnginesFileError([`(${file}) cannot be read: ${err instanceof Error ? err.message : String(err)}`]);
  }
  return parseEnginesFile(text, file.toLowerCase().endsWith('.json') ? 'json' : 'yaml', builtIn);
}

/** Parses and checks one file's text; `builtIn` is the catalog it sits beside (ids it may not take, backups it may name). */
export function parseEnginesFile(text: string, format: 'yaml' | 'json', builtIn: ReadonlyMap<string, EngineSpec>): ConfiguredEngine[] {
  let raw: unknown;
  try {
    raw = format === 'json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new EnginesFileError([`is not valid ${format.toUpperCase()}: ${err instanceof Error ? err.message : String(err)}`]);
  }
  const file = File.safeParse(raw);
  if (!file.success)
    throw new EnginesFileError(
      file.error.issues.flatMap((i) => {
        if (i.code === 'unrecognized_keys') return i.keys.map((key) => `${key}: unknown field`);
        if (i.path.length === 0) return [i.message];
        const missing = i.code === 'invalid_type' && isRecord(raw) && raw[String(i.path[0])] === undefined;
        return [`${i.path.join('.')}: ${missing ? 'is required' : i.message}`];
      }),
    );

  const problems: string[] = [];
  const entries: { index: number; entry: z.infer<typeof Entry> }[] = [];
  file.data.engines.forEach((item, index) => {
    const parsed = Entry.safeParse(item);
    if (parsed.success) entries.push({ index, entry: parsed.data });
    else for (const issue of parsed.error.issues) problems.push(...describe(index, item, issue));
  });

  // Own keys and `sim/` are read by family, so a configured engine never joins a built-in one.
  const builtInFamilies = new Set([...builtIn.values()].map((s) => s.family));
  const ids = new Map<string, number>();
  for (const { index, entry } of entries) {
    const name = `engines[${index}] (${entry.id})`;
    const family = entry.id.split('/')[0] ?? '';
    if (builtIn.has(entry.id)) problems.push(`${name}: id: is a built-in engine; a configured one needs an id of its own`);
    else if (builtInFamilies.has(family))
      problems.push(`${name}: id: the family "${family}" is the built-in catalog's; give the engine a family of its own, e.g. local/`);
    const first = ids.get(entry.id);
    if (first !== undefined) problems.push(`${name}: id: repeats engines[${first}]`);
    else ids.set(entry.id, index);
  }
  // A backup may name an entry refused above: that entry's own problem is the one to report.
  const declared = new Set(file.data.engines.flatMap((item) => (isRecord(item) && typeof item.id === 'string' ? [item.id] : [])));
  for (const { index, entry } of entries)
    if (entry.backup !== entry.id && !builtIn.has(entry.backup) && !declared.has(entry.backup))
      problems.push(`engines[${index}] (${entry.id}): backup: no engine "${entry.backup}" (built-in or in this file)`);

  if (problems.length > 0) throw new EnginesFileError(problems);
  return entries.map(({ entry }) => toConfigured(entry));
}

/**
 * The endpoint and key an API-key protocol's engine is called with, the key registered with the redactor as it is
 * read (as the service's own keys are); `''` for a keyless server. Undefined while its key variable is unset, and for
 * `bedrock`, which signs with the service's AWS credentials.
 */
export function configuredKey(engine: ConfiguredEngine, variable: EnvLookup): ApiKeyConfig | undefined {
  if (engine.spec.protocol === 'bedrock' || engine.baseUrl === undefined) return undefined;
  if (engine.apiKeyEnv === undefined) return { apiKey: '', baseUrl: engine.baseUrl };
  const apiKey = variable(engine.apiKeyEnv)?.trim();
  if (!apiKey) return undefined;
  registerSecret(apiKey);
  return { apiKey, baseUrl: engine.baseUrl };
}

function toConfigured(e: z.infer<typeof Entry>): ConfiguredEngine {
  const family = e.id.split('/')[0] ?? e.id;
  const spec: EngineSpec = {
    id: e.id,
    family,
    maker: e.maker ?? family,
    protocol: e.protocol,
    model: e.model,
    tier: e.tier,
    inputUsdPerMtok: e.input_usd_per_mtok,
    outputUsdPerMtok: e.output_usd_per_mtok,
    contextTokens: e.context_tokens,
    maxOutputTokens: e.max_output_tokens,
    backup: e.backup,
    reasoning: e.reasoning,
    structuredOutput: e.structured_output,
    hedging: e.hedging,
    ...(e.concurrency !== undefined ? { concurrency: e.concurrency } : {}),
  };
  return { spec, baseUrl: e.base_url, apiKeyEnv: e.api_key_env };
}

/** `engines[1] (local/x): base_url: must be a URL`; an unknown field is named as the field. */
function describe(index: number, item: unknown, issue: z.core.$ZodIssue): string[] {
  const id = isRecord(item) && typeof item.id === 'string' ? ` (${item.id})` : '';
  const name = `engines[${index}]${id}`;
  if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => `${name}: ${key}: unknown field`);
  if (issue.path.length === 0) return [`${name}: must be a mapping of fields`];
  const field = issue.path.map(String).join('.');
  const missing = issue.code === 'invalid_type' && isRecord(item) && item[field] === undefined;
  return [`${name}: ${field}: ${missing ? 'is required' : issue.message}`];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
