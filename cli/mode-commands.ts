import fs from 'node:fs';
import { z } from 'zod';
import {
  checkModeSpec,
  inviteOrganisation,
  listMode,
  listOrganisationModes,
  operatorOf,
  releaseMode,
  reviewListing,
  saveMode,
  setPriceFloor,
  type AuthoringDeps,
  type ModeView,
} from '../operations/authoring/modes';
import { modeTemplate } from '../domain/mode-spec';
import type { Refusal } from '../domain/mode-validation-codes';
import { createEngines } from '../engines';
import type { Principal } from '../operations/principal';
import { command, required, UsageError, type Command, type CommandContext, type CommandOutput } from './command';

/**
 * The mode builder for operators (issue: modes that organisations build): the same authoring functions the MCP
 * tools and the web builder call, acting as the organisation named by `--org` (or as the platform with `--system`).
 */

export function refusalLine(r: Refusal): string {
  const extra = r.suggested_ticker ? ` (try ${r.suggested_ticker})` : r.tiers ? ` (tiers: ${r.tiers.join(', ')})` : '';
  return `${r.code}${r.path ? ` at ${r.path}` : ''}: ${r.message}${extra}`;
}

function deps(ctx: CommandContext): AuthoringDeps {
  const { config } = ctx;
  return {
    db: ctx.resources.db,
    form: config.QUORUM_FORM,
    engines: createEngines({ config, variable: ctx.variable, logger: ctx.log }),
    config,
  };
}

const oneFile = z.array(z.string()).length(1, 'name one FILE');
const oneId = z.array(z.string()).length(1, 'name one MODE_ID (id or ticker)');

function readSpec(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${(err as Error).message}`);
  }
}

/** The operator as the author a command acts as: `--org`, or the platform with `--system` (exactly one). */
function authorOf(input: { org?: string; system?: boolean }): Principal & { via: 'operator' } {
  if (input.system === (input.org !== undefined)) throw new UsageError('give --org ORG_ID, or --system for a platform mode');
  return { via: 'operator', orgId: input.system ? null : (input.org as string) };
}

/** An operator acting on an existing mode acts as its organisation. */
async function ownerOf(ctx: CommandContext, modeId: string): Promise<Principal & { via: 'operator' }> {
  return operatorOf(ctx.resources, modeId);
}

function shown(v: ModeView, verb: string): CommandOutput {
  const hash = v.mode_config_hash ? `, mode_config_hash ${v.mode_config_hash}` : '';
  const draft = v.draft ? `; draft revision ${v.draft.revision} (${v.draft.config_hash})` : '';
  const lab = v.lab_model ? `; lab: ${v.lab_model}` : '';
  return {
    json: { ...v },
    text: `${verb} ${v.mode_id} (${v.ticker}, "${v.name}"): ${v.state}, version ${v.version}${hash}${draft}${lab}. Call it as model ${v.model}.`,
  };
}

const modeTemplateCmd = command({
  name: 'mode template',
  usage: '',
  options: {},
  input: z.object({}),
  async run() {
    const spec = modeTemplate();
    return { json: spec, text: JSON.stringify(spec, null, 2) };
  },
});

const scopeOptions = { org: { type: 'string' }, system: { type: 'boolean' }, mode: { type: 'string' } } as const;
const scopeInput = { org: z.string().min(1).optional(), system: z.boolean().optional(), mode: z.string().min(1).optional() };

const modeValidate = command({
  name: 'mode validate',
  usage: 'FILE (--org ORG_ID | --system) [--mode MODE_ID]',
  options: scopeOptions,
  positionals: true,
  input: z.object({ ...scopeInput, files: oneFile }),
  async run(input, ctx) {
    const result = await checkModeSpec(deps(ctx), authorOf(input), { spec: readSpec(input.files[0]), modeId: input.mode });
    return {
      json: result,
      text: result.valid
        ? `${input.files[0]} passes every check.`
        : [`${input.files[0]}: ${result.refusals.length} refusal(s)`, ...result.refusals.map((r) => `  ${refusalLine(r)}`)].join('\n'),
      exitCode: result.valid ? 0 : 1,
    };
  },
});

const modeSave = command({
  name: 'mode save',
  usage: 'FILE (--org ORG_ID | --system) [--mode MODE_ID] [--release]',
  options: { ...scopeOptions, release: { type: 'boolean' } },
  positionals: true,
  input: z.object({ ...scopeInput, release: z.boolean().optional(), files: oneFile }),
  async run(input, ctx) {
    const author = input.mode && !input.org && !input.system ? await ownerOf(ctx, input.mode) : authorOf(input);
    const v = await saveMode(deps(ctx), author, { spec: readSpec(input.files[0]), modeId: input.mode, release: input.release });
    return shown(v, input.release ? 'Released' : 'Saved the draft of');
  },
});

const modeRelease = command({
  name: 'mode release',
  usage: 'MODE_ID',
  options: {},
  positionals: true,
  input: z.object({ files: oneId }),
  async run({ files: [id] }, ctx) {
    return shown(await releaseMode(deps(ctx), await ownerOf(ctx, id), id), 'Released');
  },
});

const modeList = command({
  name: 'mode list',
  usage: '--org ORG_ID',
  options: { org: { type: 'string' } },
  input: z.object({ org: required }),
  async run({ org }, ctx) {
    const modes = await listOrganisationModes(deps(ctx), org);
    const lines = modes.map(
      (m) =>
        `${m.mode_id}  ${m.ticker}  ${m.state} v${m.version}${m.mode_config_hash ? ` ${m.mode_config_hash}` : ''}${m.draft ? `  draft r${m.draft.revision}` : ''}${m.listing ? `  ${m.listing.state}` : ''}  "${m.name}"`,
    );
    return { json: { object: 'list', data: modes }, text: lines.length ? lines.join('\n') : `${org} has no modes of its own.` };
  },
});

const modePublish = command({
  name: 'mode publish',
  usage: 'MODE_ID',
  options: {},
  positionals: true,
  input: z.object({ files: oneId }),
  async run({ files: [id] }, ctx) {
    return shown(await listMode(deps(ctx), await ownerOf(ctx, id), id), 'Listed');
  },
});

const modeInvite = command({
  name: 'mode invite',
  usage: 'MODE_ID --org OTHER_ORG_ID',
  options: { org: { type: 'string' } },
  positionals: true,
  input: z.object({ org: required, files: oneId }),
  async run({ org, files: [id] }, ctx) {
    const out = await inviteOrganisation(deps(ctx), await ownerOf(ctx, id), id, org);
    return { json: out, text: `${org} may now call the lab version of ${out.mode_id}.` };
  },
});

const modeReview = command({
  name: 'mode review',
  usage: 'MODE_ID (--approve | --reject | --delist) [--note TEXT]',
  options: { approve: { type: 'boolean' }, reject: { type: 'boolean' }, delist: { type: 'boolean' }, note: { type: 'string' } },
  positionals: true,
  input: z
    .object({
      approve: z.boolean().optional(),
      reject: z.boolean().optional(),
      delist: z.boolean().optional(),
      note: z.string().optional(),
      files: oneId,
    })
    .refine((v) => [v.approve, v.reject, v.delist].filter(Boolean).length === 1, 'give exactly one of --approve, --reject, --delist'),
  async run(input, ctx) {
    const decision = input.approve ? 'approve' : input.reject ? 'reject' : 'delist';
    return shown(await reviewListing(deps(ctx), input.files[0], decision, input.note), `Reviewed (${decision})`);
  },
});

const usdAmount = z
  .string()
  .regex(/^\d+(\.\d{1,6})?$/, 'must be a USD amount, e.g. 0.05')
  .transform(Number);

const priceFloor = command({
  name: 'price floor',
  usage: '--per-mtok USD --surcharge USD',
  options: { 'per-mtok': { type: 'string' }, surcharge: { type: 'string' } },
  input: z.object({ 'per-mtok': usdAmount, surcharge: usdAmount }),
  async run(input, ctx) {
    const floor = { perMtokUsd: input['per-mtok'], surchargeUsd: input.surcharge };
    await setPriceFloor(ctx.resources, { via: 'operator', orgId: null }, floor);
    return {
      json: { per_mtok_usd: floor.perMtokUsd, surcharge_usd: floor.surchargeUsd },
      text: `Price floor: $${floor.perMtokUsd} per 1M tokens (Form B), $${floor.surchargeUsd} per call (Form A).`,
    };
  },
});

export const modeCommands: readonly Command[] = [
  modeTemplateCmd,
  modeValidate,
  modeSave,
  modeRelease,
  modeList,
  modePublish,
  modeInvite,
  modeReview,
  priceFloor,
];
