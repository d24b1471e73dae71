// domain/: pure logic (modes, money, pricing, statistics, questions, the error table): no I/O, no process state.
import { z } from 'zod';
import { canonicalHash } from './canonical-json';

/**
 * Mode specs (DESIGN §12): which engines sit in which seats per tier, the staff, rounds, critique policy,
 * grounding, fees and ceiling. Stored in Postgres as versioned JSON; `configHash` identifies a panel.
 */
export const TIERS = ['experience', 'plus', 'pro'] as const;
export type Tier = (typeof TIERS)[number];
export const DEPTHS = ['light', 'medium', 'deep'] as const;
export type Depth = (typeof DEPTHS)[number];
/** Tiers in order: a higher rank is a stronger, dearer engine. */
export const TIER_RANK: Readonly<Record<Tier, number>> = { experience: 0, plus: 1, pro: 2 };

/** An engine id: `family/model`, the family in lowercase letters, digits and `-`. */
export const ENGINE_ID = /^[a-z0-9-]+\/[A-Za-z0-9._:-]+$/;
const engineId = z.string().regex(ENGINE_ID, 'engine id is family/model');
const micros = z.number().int().nonnegative();

const StaffSeat = z.object({ engine: engineId, backup: engineId.optional() });

/** The longest grace a quorum may give its late seats: well inside an engine call's 180 s deadline. */
export const QUORUM_GRACE_MAX_MS = 120_000;
/**
 * Issue 40 item 6: a round with more seats than `seats` goes on to judging once `seats` of them have answered and
 * `graceMs` has passed since the last of those answers; the seats still out are cancelled (workflows/quorum.ts).
 */
export const QuorumSchema = z.object({
  seats: z.number().int().min(2).max(3),
  graceMs: z.number().int().min(0).max(QUORUM_GRACE_MAX_MS),
});
export type Quorum = z.infer<typeof QuorumSchema>;

/**
 * How a panel makes its one answer (issue 52). `synthesis`: the judge scores the seats and a synthesis call writes the
 * answer (every mode before issue 52). `vote`: where the question has an answer kind, the seats' answers are read and
 * voted, the winning seat's text returned as written; `select`, and a vote without a kind: the judge names one seat
 * and its text is returned. `prose: pinned` then has the synthesis engine rewrite the chosen text, told the chosen
 * answer, its result kept only when it states that answer uncut. `firstWave`: round 1 asks this many seats first and
 * the rest only when they disagree or one is unreadable (domain/aggregation.ts).
 */
export const AGGREGATION_METHODS = ['synthesis', 'select', 'vote'] as const;
export const AGGREGATION_PROSE = ['verbatim', 'pinned'] as const;
/** Who breaks a tie of the vote: the judge among the tied seats only, or the first tied seat in seat order. */
export const TIE_BREAKS = ['judge', 'first'] as const;
export const AggregationSchema = z.object({
  method: z.enum(AGGREGATION_METHODS),
  prose: z.enum(AGGREGATION_PROSE),
  tieBreak: z.enum(TIE_BREAKS),
  /** When no seat's answer is readable, one short structured call may read them out of the seats' texts. */
  ballot: z.boolean(),
  firstWave: z.number().int().min(2).max(2).optional(),
});
export type Aggregation = z.infer<typeof AggregationSchema>;

/** The longest system prompt a seat may carry (about 500 tokens, counted into the quote for every call). */
export const SEAT_SYSTEM_PROMPT_MAX = 2_000;
/**
 * What a seat's engine is asked with beyond the prompt (issue 39 item 3): its sampling temperature and seed, and a
 * system prompt of its own, so seats on one model (a local panel) answer differently. Absent: the provider's defaults.
 */
export const SeatTuningSchema = z.object({
  temperature: z.number().min(0).max(2).optional(),
  seed: z.number().int().min(0).max(2_147_483_647).optional(),
  systemPrompt: z.string().min(1).max(SEAT_SYSTEM_PROMPT_MAX).optional(),
});
export type SeatTuning = z.infer<typeof SeatTuningSchema>;

/**
 * A tier's seats; `backups[i]`, when set, is tried right after seat i's engine, before the catalog's own backup;
 * `tunings[i]`, when set, goes with seat i to whichever engine of its chain answers.
 */
const Row = (size: z.ZodArray<typeof engineId>) =>
  z.object({ seats: size, backups: z.array(engineId.nullable()).optional(), tunings: z.array(SeatTuningSchema.nullable()).optional() });

export const ModeConfigSchema = z.object({
  /** Seats per tier: one for `experience` (express), three for the panel tiers. */
  tiers: z.object({
    experience: Row(z.array(engineId).length(1)),
    plus: Row(z.array(engineId).min(1).max(3)).optional(),
    pro: Row(z.array(engineId).min(1).max(3)).optional(),
  }),
  staff: z.object({ judge: StaffSeat, synthesis: StaffSeat, classifier: z.object({ engine: engineId }).optional() }),
  rounds: z.number().int().min(1).max(3),
  critique: z.enum(['always', 'when_split', 'never']),
  grounding: z.enum(['auto', 'off']),
  /** `auto`: the classifier may route easy prompts to one seat; `always`: every call is express. */
  express: z.enum(['auto', 'always', 'never']),
  skipSynthesisWhenConverged: z.boolean(),
  seatMaxOutputTokens: z.number().int().min(16).max(32_000),
  fees: z.object({
    /** Form A: the mode's surcharge per depth, and on the express lane. */
    surchargeByDepthMicros: z.object({ light: micros, medium: micros, deep: micros }),
    expressSurchargeMicros: micros,
    /** Form B: the mode's fee in USD per 1M input tokens processed (= micro-dollars per token); output at 4×. */
    perMtokInputUsd: z.number().nonnegative(),
  }),
  /** The mode's own per-call ceiling (Form A stops there; Form B's is the higher of $2 and this). */
  ceilingMicros: micros,
  /** Provider families the mode is designed to use, disclosed in `/v1/models` before any data is sent. */
  providerFamilies: z.array(z.string()).min(1),
  /** Absent (every mode before issue 40): each round waits for every seat. */
  quorum: QuorumSchema.optional(),
  /** Absent (every mode before issue 52): judge, then synthesis unless skipped, as `method: 'synthesis'`. */
  aggregation: AggregationSchema.optional(),
});
export type ModeConfig = z.infer<typeof ModeConfigSchema>;

export interface ModeRecord {
  /** Form A id (`api_model_id`). */
  id: string;
  /** Form B ticker `COMPANY:MODE`. */
  ticker: string;
  orgId: string | null;
  name: string;
  description: string | null;
  useWhen: string;
  published: boolean;
  version: number;
  configHash: string;
  config: ModeConfig;
}

/** The exact mode version a call runs on, as the API resolved it and handed it to the workflow. */
export type ResolvedMode = Pick<ModeRecord, 'id' | 'ticker' | 'version' | 'configHash' | 'config'>;

export const TICKER_RE = /^[A-Z0-9]{2,8}:[A-Z]{4}(:LAB)?$/;

/** Tiers a configuration has seat rows for (a platform mode's save keeps them all). */
export function tiersOf(config: ModeConfig): Tier[] {
  return TIERS.filter((t) => config.tiers[t] !== undefined);
}

/** Short hash of the engine and deliberation configuration: any change to the panel changes it. */
export function modeConfigHash(config: ModeConfig): string {
  return canonicalHash(config).slice(0, 12);
}

/**
 * The panels the system modes are designed for. Each seat names a real engine; when its family has no key
 * configured here, the seat sits on the same tier's `sim` engine instead (see domain/seat-assignment), so every
 * system mode works offline while `/v1/models` still discloses the families it is designed for.
 */
const PANELS = {
  experience: { seats: ['openai/gpt-4.1-mini'] },
  plus: { seats: ['openai/gpt-4.1', 'anthropic/claude-sonnet-4', 'google/gemini-2.5-flash'] },
  pro: { seats: ['openai/gpt-5', 'anthropic/claude-opus-4-1', 'google/gemini-2.5-pro'] },
};
const STAFF = {
  judge: { engine: 'anthropic/claude-sonnet-4', backup: 'openai/gpt-4.1' },
  synthesis: { engine: 'openai/gpt-4.1', backup: 'anthropic/claude-sonnet-4' },
};
const FAMILIES = ['openai', 'anthropic', 'google'];

export type SystemModeSeed = Omit<ModeRecord, 'version' | 'configHash' | 'orgId' | 'published'>;

export const SYSTEM_MODES: readonly SystemModeSeed[] = [
  {
    id: 'quorum-panel',
    ticker: 'QRM:PANL',
    name: 'Quorum Panel',
    description:
      'Three engines from three families answer independently; a judge scores them; one synthesis answer. Critique only when the seats split.',
    useWhen: 'General questions where a second and third opinion are worth the cost.',
    config: {
      tiers: PANELS,
      staff: STAFF,
      rounds: 2,
      critique: 'when_split',
      grounding: 'auto',
      express: 'auto',
      skipSynthesisWhenConverged: true,
      seatMaxOutputTokens: 1_024,
      fees: { surchargeByDepthMicros: { light: 2_000, medium: 5_000, deep: 10_000 }, expressSurchargeMicros: 1_000, perMtokInputUsd: 0.5 },
      ceilingMicros: 1_000_000,
      providerFamilies: FAMILIES,
    },
  },
  {
    id: 'quorum-debate',
    ticker: 'QRM:DBTE',
    name: 'Quorum Debate',
    description: 'Three engines answer, then critique each other for up to three rounds before a synthesis.',
    useWhen: 'Hard reasoning, contested or high-stakes questions where seats should challenge each other.',
    config: {
      tiers: PANELS,
      staff: STAFF,
      rounds: 3,
      critique: 'always',
      grounding: 'auto',
      express: 'never',
      skipSynthesisWhenConverged: false,
      seatMaxOutputTokens: 1_536,
      fees: { surchargeByDepthMicros: { light: 5_000, medium: 10_000, deep: 20_000 }, expressSurchargeMicros: 2_000, perMtokInputUsd: 1 },
      ceilingMicros: 2_000_000,
      providerFamilies: FAMILIES,
    },
  },
  {
    id: 'quorum-express',
    ticker: 'QRM:EXPR',
    name: 'Quorum Express',
    description: 'One fast engine answers alone: no judge, no synthesis.',
    useWhen: 'Easy questions where speed and price matter more than a second opinion.',
    config: {
      tiers: { experience: PANELS.experience },
      staff: STAFF,
      rounds: 1,
      critique: 'never',
      grounding: 'off',
      express: 'always',
      skipSynthesisWhenConverged: true,
      seatMaxOutputTokens: 1_024,
      fees: { surchargeByDepthMicros: { light: 500, medium: 500, deep: 500 }, expressSurchargeMicros: 500, perMtokInputUsd: 0.1 },
      ceilingMicros: 200_000,
      providerFamilies: ['openai'],
    },
  },
];

/** What the demo modes share: no grounding, always a panel and always a synthesis, the lowest fees. */
function demoConfig(
  design: Pick<ModeConfig, 'tiers' | 'rounds' | 'critique' | 'staff' | 'seatMaxOutputTokens' | 'providerFamilies'>,
): ModeConfig {
  return {
    ...design,
    grounding: 'off',
    express: 'never',
    skipSynthesisWhenConverged: false,
    fees: { surchargeByDepthMicros: { light: 2_000, medium: 5_000, deep: 10_000 }, expressSurchargeMicros: 1_000, perMtokInputUsd: 0.5 },
    ceilingMicros: 1_000_000,
  };
}

/** The two simulated demo modes: sim staff. */
function simDemoConfig(design: Pick<ModeConfig, 'tiers' | 'rounds' | 'critique'>): ModeConfig {
  return demoConfig({
    ...design,
    staff: { judge: { engine: 'sim/alpha-pro', backup: 'sim/gamma-pro' }, synthesis: { engine: 'sim/beta-pro', backup: 'sim/alpha-pro' } },
    seatMaxOutputTokens: 512,
    providerFamilies: ['sim'],
  });
}

/**
 * Two demo modes on simulated engines, so runs and certification work offline: one built to beat its baseline
 * (three plus-tier engines that critique each other before a synthesis), one built to lose (a strong engine
 * outvoted by two weak ones that share their mistakes). Their names say what they are.
 */
export function simDemoModes(owner: { idPrefix: string; company: string }): SystemModeSeed[] {
  return [
    {
      id: `${owner.idPrefix}-strong-sim`,
      ticker: `${owner.company}:STRG`,
      name: 'Strong Panel (simulated)',
      description:
        'Simulated engines, built to beat its baseline: three plus-tier engines answer, critique each other once, and a synthesis takes the answer they agree on.',
      useWhen: 'Demonstrating a test run or a certification that passes, offline.',
      config: simDemoConfig({
        tiers: {
          experience: { seats: ['sim/alpha-experience'] },
          plus: { seats: ['sim/alpha-plus', 'sim/beta-plus', 'sim/gamma-plus'] },
          pro: { seats: ['sim/alpha-pro', 'sim/beta-pro', 'sim/gamma-pro'] },
        },
        rounds: 2,
        critique: 'always',
      }),
    },
    {
      id: `${owner.idPrefix}-weak-sim`,
      ticker: `${owner.company}:WEAK`,
      name: 'Weak Panel (simulated)',
      description:
        'Simulated engines, built to lose to its baseline: one strong engine sits with two weak ones that make the same mistakes and outvote it.',
      useWhen: 'Demonstrating a certification that fails, offline.',
      config: simDemoConfig({
        tiers: {
          experience: { seats: ['sim/novice-a'] },
          plus: { seats: ['sim/beta-pro', 'sim/novice-a', 'sim/novice-b'] },
        },
        rounds: 1,
        critique: 'never',
      }),
    },
  ];
}

/**
 * The local demo's panel (`npm start` with QUORUM_LOCAL_MODEL=on; issues 39 and 52): three seats on the one real local
 * model with one brief, drawn alike (temperature 0.8, the server's default) under distinct seeds. They vote (a 135M
 * model rewriting three answers into one lost the answer): the first two answer first and the third only when they
 * disagree or one is unreadable; when none states a readable answer, one short ballot call reads them; a tie goes to
 * the first tied seat. The seats are alike on purpose: stopping when two agree, and taking the first of a tie, give a
 * vote of three's answer only when the seats are exchangeable samples; a cooler seat agrees with another by its bias
 * (docs/evidence.md: at 0.2 this model answered BoolQ `no` 94 times of 94, and its early stops lost 8 points).
 */
export function localDemoMode(owner: { idPrefix: string; company: string }, engineId: string): SystemModeSeed {
  const brief = 'You are a careful analyst. Answer precisely and briefly.';
  const seat = (temperature: number, seed: number): SeatTuning => ({ temperature, seed, systemPrompt: brief });
  return {
    id: `${owner.idPrefix}-local-panel`,
    ticker: `${owner.company}:LOCL`,
    name: 'Local Panel',
    description:
      'Three seats on the one local model, each with its own temperature and seed; two answer first, the third only when they disagree; the seats vote and the winning seat’s answer is returned as written.',
    useWhen: 'Trying a panel on real text, offline, on this machine.',
    config: {
      ...demoConfig({
        tiers: {
          experience: { seats: [engineId] },
          plus: { seats: [engineId, engineId, engineId], tunings: [seat(0.8, 11), seat(0.8, 23), seat(0.8, 37)] },
        },
        staff: { judge: { engine: engineId }, synthesis: { engine: engineId } },
        rounds: 1,
        critique: 'never',
        // A small model on two cores writes about 20 tokens a second: short answers keep a panel call within a minute.
        seatMaxOutputTokens: 128,
        providerFamilies: [engineId.split('/')[0]],
      }),
      aggregation: { method: 'vote', prose: 'verbatim', tieBreak: 'first', ballot: true, firstWave: 2 },
    },
  };
}
