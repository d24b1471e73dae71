import type { Difficulty, EngineSpec, Family, Maker, Tier } from './types';

/**
 * The engines Quorum can seat.
 *
 * Prices: list prices in USD per million tokens as published on each provider's pricing page
 * (openai.com/api/pricing, anthropic.com/pricing, ai.google.dev/gemini-api/docs/pricing,
 * aws.amazon.com/bedrock/pricing for us-east-1 on-demand), taken on 2025-08-15. Gemini 2.5 Pro's
 * rate is the one for prompts up to 200k tokens, which covers every Quorum call (8,000-token input
 * limit). Limits are the providers' documented context window and maximum output tokens.
 *
 * Every tier has engines from at least three real families, so a three-seat panel can seat three
 * makers; each engine's backup is another family of the same tier.
 */
type Row = Pick<EngineSpec, 'model' | 'tier' | 'inputUsdPerMtok' | 'outputUsdPerMtok' | 'contextTokens' | 'maxOutputTokens' | 'backup'> & {
  family: Family;
  maker: Maker;
  name: string;
  reasoning?: boolean;
};

/**
 * What every built-in engine shares: it speaks its family's protocol, each real protocol has structured output (and
 * a `sim` engine answers staff in their JSON anyway), a hedged duplicate is just another request, and no slot limit.
 */
function builtIn(family: Family): Pick<EngineSpec, 'family' | 'protocol' | 'structuredOutput' | 'hedging'> {
  return { family, protocol: family, structuredOutput: true, hedging: true };
}

const REAL: readonly Row[] = [
  // experience: fast, cheap, one seat on the express lane
  {
    family: 'openai',
    maker: 'openai',
    name: 'gpt-4.1-mini',
    model: 'gpt-4.1-mini',
    tier: 'experience',
    inputUsdPerMtok: 0.4,
    outputUsdPerMtok: 1.6,
    contextTokens: 1_047_576,
    maxOutputTokens: 32_768,
    backup: 'google/gemini-2.5-flash-lite',
  },
  {
    family: 'anthropic',
    maker: 'anthropic',
    name: 'claude-3-5-haiku',
    model: 'claude-3-5-haiku-20241022',
    tier: 'experience',
    inputUsdPerMtok: 0.8,
    outputUsdPerMtok: 4,
    contextTokens: 200_000,
    maxOutputTokens: 8_192,
    backup: 'openai/gpt-4.1-mini',
  },
  {
    family: 'google',
    maker: 'google',
    name: 'gemini-2.5-flash-lite',
    model: 'gemini-2.5-flash-lite',
    tier: 'experience',
    inputUsdPerMtok: 0.1,
    outputUsdPerMtok: 0.4,
    contextTokens: 1_048_576,
    maxOutputTokens: 65_536,
    backup: 'anthropic/claude-3-5-haiku',
    reasoning: true,
  },
  {
    family: 'bedrock',
    maker: 'meta',
    name: 'meta.llama3-1-8b-instruct',
    model: 'us.meta.llama3-1-8b-instruct-v1:0',
    tier: 'experience',
    inputUsdPerMtok: 0.22,
    outputUsdPerMtok: 0.22,
    contextTokens: 128_000,
    maxOutputTokens: 2_048,
    backup: 'openai/gpt-4.1-mini',
  },
  // plus: the foundation panel
  {
    family: 'openai',
    maker: 'openai',
    name: 'gpt-4.1',
    model: 'gpt-4.1',
    tier: 'plus',
    inputUsdPerMtok: 2,
    outputUsdPerMtok: 8,
    contextTokens: 1_047_576,
    maxOutputTokens: 32_768,
    backup: 'google/gemini-2.5-flash',
  },
  {
    family: 'anthropic',
    maker: 'anthropic',
    name: 'claude-sonnet-4',
    model: 'claude-sonnet-4-20250514',
    tier: 'plus',
    inputUsdPerMtok: 3,
    outputUsdPerMtok: 15,
    contextTokens: 200_000,
    maxOutputTokens: 64_000,
    backup: 'openai/gpt-4.1',
  },
  {
    family: 'google',
    maker: 'google',
    name: 'gemini-2.5-flash',
    model: 'gemini-2.5-flash',
    tier: 'plus',
    inputUsdPerMtok: 0.3,
    outputUsdPerMtok: 2.5,
    contextTokens: 1_048_576,
    maxOutputTokens: 65_536,
    backup: 'anthropic/claude-sonnet-4',
    reasoning: true,
  },
  {
    family: 'bedrock',
    maker: 'meta',
    name: 'meta.llama3-3-70b-instruct',
    model: 'us.meta.llama3-3-70b-instruct-v1:0',
    tier: 'plus',
    inputUsdPerMtok: 0.72,
    outputUsdPerMtok: 0.72,
    contextTokens: 128_000,
    maxOutputTokens: 2_048,
    backup: 'google/gemini-2.5-flash',
  },
  // pro: the frontier panel
  {
    family: 'openai',
    maker: 'openai',
    name: 'gpt-5',
    model: 'gpt-5',
    tier: 'pro',
    inputUsdPerMtok: 1.25,
    outputUsdPerMtok: 10,
    contextTokens: 400_000,
    maxOutputTokens: 128_000,
    backup: 'google/gemini-2.5-pro',
    reasoning: true,
  },
  {
    family: 'anthropic',
    maker: 'anthropic',
    name: 'claude-opus-4-1',
    model: 'claude-opus-4-1-20250805',
    tier: 'pro',
    inputUsdPerMtok: 15,
    outputUsdPerMtok: 75,
    contextTokens: 200_000,
    maxOutputTokens: 32_000,
    backup: 'openai/gpt-5',
  },
  {
    family: 'google',
    maker: 'google',
    name: 'gemini-2.5-pro',
    model: 'gemini-2.5-pro',
    tier: 'pro',
    inputUsdPerMtok: 1.25,
    outputUsdPerMtok: 10,
    contextTokens: 1_048_576,
    maxOutputTokens: 65_536,
    backup: 'anthropic/claude-opus-4-1',
    reasoning: true,
  },
  {
    family: 'bedrock',
    maker: 'meta',
    name: 'meta.llama4-maverick-17b-instruct',
    model: 'us.meta.llama4-maverick-17b-instruct-v1:0',
    tier: 'pro',
    inputUsdPerMtok: 0.24,
    outputUsdPerMtok: 0.97,
    contextTokens: 1_000_000,
    maxOutputTokens: 8_192,
    backup: 'openai/gpt-5',
  },
];

/**
 * Simulated engines mirror the tiers (three per tier, so a sim panel seats three distinct engines).
 * Their prices are in the range of the real tier so billing paths see realistic amounts; their skill
 * rises with the tier and falls with the difficulty.
 */
const SIM_TIERS: Readonly<Record<Tier, { prices: readonly [number, number][]; skill: Record<Difficulty, number> }>> = {
  experience: {
    prices: [
      [0.2, 0.8],
      [0.15, 0.6],
      [0.4, 1.6],
    ],
    skill: { light: 0.85, medium: 0.6, hard: 0.3 },
  },
  plus: {
    prices: [
      [2, 8],
      [3, 15],
      [0.5, 2],
    ],
    skill: { light: 0.92, medium: 0.75, hard: 0.5 },
  },
  pro: {
    prices: [
      [1.25, 10],
      [5, 25],
      [2, 8],
    ],
    skill: { light: 0.97, medium: 0.88, hard: 0.7 },
  },
};
const SIM_NAMES = ['alpha', 'beta', 'gamma'] as const;
/** Small per-engine offsets, so the three seats of a sim panel are not equally good. */
const SIM_SKILL_OFFSET = [0.03, 0, -0.03] as const;

function simRows(): EngineSpec[] {
  const out: EngineSpec[] = [];
  for (const tier of ['experience', 'plus', 'pro'] as const) {
    const { prices, skill } = SIM_TIERS[tier];
    SIM_NAMES.forEach((name, i) => {
      const [input, output] = prices[i] ?? [1, 4];
      const offset = SIM_SKILL_OFFSET[i] ?? 0;
      const next = SIM_NAMES[(i + 1) % SIM_NAMES.length];
      out.push({
        ...builtIn('sim'),
        id: `sim/${name}-${tier}`,
        maker: 'sim',
        model: `${name}-${tier}`,
        tier,
        inputUsdPerMtok: input,
        outputUsdPerMtok: output,
        contextTokens: 128_000,
        maxOutputTokens: 8_192,
        backup: `sim/${next}-${tier}`,
        reasoning: false,
        skill: { light: clamp01(skill.light + offset), medium: clamp01(skill.medium + offset), hard: clamp01(skill.hard + offset) },
      });
    });
  }
  return out;
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, Math.round(x * 1000) / 1000));
}

/**
 * Two weak simulated engines trained alike: they make the same mistake on the same question, so together they
 * outvote a stronger seat. The demo mode built to lose its certification seats them beside a strong engine.
 */
const SIM_NOVICES: readonly EngineSpec[] = (['novice-a', 'novice-b'] as const).map((model, i) => ({
  ...builtIn('sim'),
  id: `sim/${model}`,
  maker: 'sim',
  model,
  tier: 'experience',
  inputUsdPerMtok: 0.1,
  outputUsdPerMtok: 0.4,
  contextTokens: 128_000,
  maxOutputTokens: 8_192,
  backup: i === 0 ? 'sim/novice-b' : 'sim/novice-a',
  reasoning: false,
  skill: { light: 0.35, medium: 0.2, hard: 0.1 },
  mistakeGroup: 'novices',
}));

export const CATALOG: readonly EngineSpec[] = Object.freeze([
  ...REAL.map(({ name, reasoning, ...row }): EngineSpec => ({
    ...row,
    ...builtIn(row.family),
    id: `${row.family}/${name}`,
    reasoning: reasoning ?? false,
  })),
  ...simRows(),
  ...SIM_NOVICES,
]);

const BY_ID: ReadonlyMap<string, EngineSpec> = new Map(CATALOG.map((s) => [s.id, s]));

export function findEngine(id: string): EngineSpec | undefined {
  return BY_ID.get(id);
}

export function enginesOf(filter: { tier?: Tier; family?: Family }): EngineSpec[] {
  return CATALOG.filter(
    (s) => (filter.tier === undefined || s.tier === filter.tier) && (filter.family === undefined || s.family === filter.family),
  );
}
