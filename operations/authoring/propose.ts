import { orgModeNamed, readPriceFloor } from '../../db/repositories/mode-authoring';
import { QuorumError } from '../../domain/errors';
import { designMode, type ProposalEngine, type ProposedSpec } from '../../domain/mode-proposal';
import { NAME_MAX } from '../../domain/mode-spec';
import type { Refusal } from '../../domain/mode-validation-codes';
import { microsToUsd } from '../../domain/money';
import { DEPTHS, type Depth, type Tier } from '../../domain/modes';
import type { Principal } from '../principal';
import { authorOrg, checkModeSpec, configuredPriceFloor, listEngines, requireOrg, type AuthoringDeps } from './modes';

/**
 * `advisor_propose_mode`: a whole mode designed from a description (domain/mode-proposal.ts) over the engines that can
 * run for this author, then checked with the same `validate_mode` a save runs. Nothing is written, so a test key may
 * propose; saving is the caller's next step.
 */

export interface ProposeInput {
  description: string;
  /** The most a typical deep panel call should cost. */
  budgetUsd?: number;
  /** The highest tier the mode seats (default pro). */
  tier?: Tier;
}

type PerDepthUsd = Record<Depth, number>;

/** A type alias, not an interface, so the edges can hand it on as a JSON object. */
export type ModeProposal = {
  proposal: ProposedSpec;
  valid: true;
  rationale: string[];
  price: {
    currency: 'usd';
    /** The tier `per_call_usd` is for: the highest the mode seats. */
    tier: Tier;
    per_call_usd: PerDepthUsd;
    by_tier_usd: Partial<Record<Tier, PerDepthUsd>>;
    assumed_prompt_tokens: Record<Depth, number>;
    budget_usd: number | null;
    within_budget: boolean | null;
  };
  next: string;
};

export async function proposeMode(deps: AuthoringDeps, author: Principal, input: ProposeInput): Promise<ModeProposal> {
  requireOrg(author);
  const description = input.description.trim();
  if (description === '')
    throw new QuorumError('invalid_request', 'Describe the mode: what it is for and what matters in its answers.', {
      param: 'description',
    });
  const budgetMicros = input.budgetUsd === undefined ? undefined : Math.round(input.budgetUsd * 1_000_000);
  if (budgetMicros !== undefined && !(Number.isSafeInteger(budgetMicros) && budgetMicros > 0))
    throw new QuorumError('invalid_request', '`budget_usd` is a positive number of dollars.', { param: 'budget_usd' });

  const [engines, floor] = await Promise.all([usableEngines(deps, author), readPriceFloor(deps.db, configuredPriceFloor(deps.config))]);
  const design = designMode({ description, budgetMicros, tier: input.tier ?? 'pro', engines, floor, form: deps.form });
  if (!design.ok && design.reason === 'too_few_engines')
    throw new QuorumError(
      'too_few_engines',
      `Not every seat can be filled from engines that can run here: ${design.shortfalls.map((s) => `${s.tier}: ${s.reason}`).join(' ')} Configure provider keys for more makers, or ask for a lower \`tier\`.`,
      { detail: { shortfalls: design.shortfalls } },
    );
  if (!design.ok) throw noProposal(design.refusals);

  const checked = await checkedProposal(deps, author, design.spec);
  const price = design.price;
  const perDepthUsd = (micros: Record<Depth, number>): PerDepthUsd =>
    Object.fromEntries(DEPTHS.map((d) => [d, microsToUsd(BigInt(micros[d]))])) as PerDepthUsd;
  const byTier = Object.fromEntries(
    Object.entries(price.byTier).map(([tier, micros]) => [tier, perDepthUsd(micros)]),
  ) as ModeProposal['price']['by_tier_usd'];
  return {
    proposal: checked.spec,
    valid: true,
    rationale: [...design.rationale, ...checked.notes],
    price: {
      currency: 'usd',
      tier: price.tier,
      per_call_usd: byTier[price.tier] as PerDepthUsd,
      by_tier_usd: byTier,
      assumed_prompt_tokens: { ...price.promptTokens },
      budget_usd: price.budgetMicros === null ? null : microsToUsd(BigInt(price.budgetMicros)),
      within_budget: price.withinBudget,
    },
    next: 'save_mode with {spec: proposal} then release (or release: true in the same call); edit it first if you like, validate_mode checks the edit.',
  };
}

/** The whole catalog (staff sit at plus even when seats stop lower), each marked whether it can run for this author. */
async function usableEngines(deps: AuthoringDeps, author: Principal): Promise<ProposalEngine[]> {
  const listed = await listEngines(deps, author, 'pro').catch((err: unknown) => {
    if (err instanceof QuorumError) throw err;
    throw new QuorumError('engines_unavailable', 'The engine list could not be read; nothing was proposed. Retry.');
  });
  return listed.map((e) => ({
    id: e.id,
    family: e.family,
    maker: e.maker,
    tier: e.tier,
    inputUsdPerMtok: e.input_usd_per_mtok,
    outputUsdPerMtok: e.output_usd_per_mtok,
    usable: e.available !== 'no',
  }));
}

function noProposal(refusals: Refusal[]): QuorumError {
  return new QuorumError('no_proposal', `The proposal failed ${refusals.length} check(s) a save runs, so none is offered; ask again.`, {
    detail: { refusals },
  });
}

/**
 * The design checked as a save would check it. What the designer cannot see is fixed here: a name the organisation
 * already uses gets a number, a ticker in use takes validation's suggestion.
 */
async function checkedProposal(
  deps: AuthoringDeps,
  author: Principal,
  designed: ProposedSpec,
): Promise<{ spec: ProposedSpec; notes: string[] }> {
  try {
    const notes: string[] = [];
    let spec = designed;
    const name = await freeName(deps, authorOrg(author), spec.name);
    if (name !== spec.name) {
      notes.push(`Your organisation already has a mode named "${spec.name}", so this one is "${name}".`);
      spec = { ...spec, name };
    }
    let result = await checkModeSpec(deps, author, { spec });
    const suggested = result.refusals.length === 1 ? result.refusals[0].suggested_ticker : undefined;
    if (suggested) {
      notes.push(`The ticker ${spec.ticker} is another of your modes', so this one is ${suggested}.`);
      spec = { ...spec, ticker: suggested };
      result = await checkModeSpec(deps, author, { spec });
    }
    if (!result.valid) throw noProposal(result.refusals);
    return { spec, notes };
  } catch (err) {
    if (err instanceof QuorumError) throw err;
    throw new QuorumError('no_proposal', 'The proposal could not be checked against the save rules; ask again.');
  }
}

/** `name`, or `name 2`, `name 3`… : the first the organisation does not use (names are unique per organisation). */
async function freeName(deps: AuthoringDeps, orgId: string | null, name: string): Promise<string> {
  if (orgId === null) return name;
  let candidate = name;
  for (let n = 2; await orgModeNamed(deps.db, orgId, candidate); n++) {
    const suffix = ` ${n}`;
    candidate = `${name.slice(0, NAME_MAX - suffix.length).trimEnd()}${suffix}`;
  }
  return candidate;
}
