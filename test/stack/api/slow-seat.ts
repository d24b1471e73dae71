import { JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
import type { Form } from '../../../domain/form';
import type { ModeConfig } from '../../../domain/modes';
import { openAiReply, type RecordedRequest, type Reply } from '../../fixtures/providers';

/**
 * A panel whose large seat (gpt-4.1) the provider holds for a minute, for tests that cancel a deliberation while it
 * waits (responses' cancel, MCP's tasks/cancel): each call's usage is fixed, so what ran is billed by hand from the
 * loopback's own record at the published prices.
 */
/** The large seat answers after a long while (it is cancelled first); everything else at once. */
export const SLOW_SEAT_MS = 60_000;
export const SEAT_USAGE = { prompt: 100, completion: 40 };
/** Published prices, USD per million tokens (micro-dollars per token): docs/money.md. */
const PRICES: Record<string, { input: number; output: number }> = {
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
};
/** The panel mode's Form B fee: $0.5 per Mtok in, output at 4x; Form A's per-answer surcharge is not charged on a cancel. */
const MODE_FEE_B = { input: 0.5, output: 2 };
/** Marks a question whose large seat is slow only in the critique round (round 1 and the judge answer at once). */
export const SLOW_CRITIQUE = '[[slow-critique]]';
/** How a critique prompt starts its quotes of the other answers (domain/prompts.ts). */
const CRITIQUE = 'Other panelists answered';

export const isStaff = (req: RecordedRequest): boolean => req.bodyText.includes(JUDGE_TAG) || req.bodyText.includes(SYNTHESIS_TAG);
export const modelOf = (req: RecordedRequest): string => (req.body as { model: string }).model;

/** A usable verdict (the seats split, so a critique round follows), or a seat's answer. */
function replyText(req: RecordedRequest): string {
  if (!req.bodyText.includes(JUDGE_TAG)) return `${modelOf(req)}: Rayleigh scattering.`;
  const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
  return JSON.stringify({
    scores: Object.fromEntries(labels.map((l) => [l, 7])),
    best: labels[0],
    why: 'Both partial.',
    divergence: 0.6,
    converged: false,
  });
}

export function script(req: RecordedRequest): Reply {
  const reply = openAiReply({
    text: replyText(req),
    promptTokens: SEAT_USAGE.prompt,
    completionTokens: SEAT_USAGE.completion,
  });
  const slowHere = !req.bodyText.includes(SLOW_CRITIQUE) || req.bodyText.includes(CRITIQUE);
  return modelOf(req) === 'gpt-4.1' && !isStaff(req) && slowHere ? { ...reply, delayMs: SLOW_SEAT_MS } : reply;
}

/** What the provider served (answered, not aborted), billed by hand: engines at the published prices, the 5% platform fee, and Form B's mode fee. */
export function servedBill(served: readonly RecordedRequest[], form: Form): { expected: number; tokens: { in: number; out: number } } {
  const engines = served.reduce(
    (n, r) => n + SEAT_USAGE.prompt * PRICES[modelOf(r)].input + SEAT_USAGE.completion * PRICES[modelOf(r)].output,
    0,
  );
  const platformFee = Math.round(engines * 0.05);
  const tokens = { in: served.length * SEAT_USAGE.prompt, out: served.length * SEAT_USAGE.completion };
  const modeFee = form === 'B' ? Math.round(tokens.in * MODE_FEE_B.input + tokens.out * MODE_FEE_B.output) : 0;
  return { expected: engines + platformFee + modeFee, tokens };
}

/** The panel mode these tests cancel: gpt-4.1 and gpt-4.1-mini seated, gpt-4.1 judging and writing the answer. */
export function slowSeatPanel(critique: boolean): Partial<ModeConfig> {
  return {
    tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini'] } },
    staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1' } },
    rounds: critique ? 2 : 1,
    critique: critique ? 'always' : 'never',
    express: 'never',
  };
}
