import { jsonObjectIn } from './json-reply';
import type { ChatMessage } from './messages';
import { seededRandom, shuffled } from './prng';

/**
 * Blind judging of a test or certification run (DESIGN §10): which engine sits in each judge slot (with
 * self-recusal), the order each judge sees the answers in, the prompts, and reading the verdicts. Pure.
 */
export const JUDGE_SLOTS = ['judge_a', 'judge_b', 'judge_c'] as const;
export type JudgeSlot = (typeof JUDGE_SLOTS)[number];
export const JUDGING_PROTOCOLS = ['pairwise', 'plurality'] as const;
export type JudgingProtocol = (typeof JUDGING_PROTOCOLS)[number];
export type Verdict = 'win' | 'tie' | 'loss';

export interface JudgeCandidate {
  engineId: string;
  /** Who made the model: a judge recuses itself from answers of its own maker (LLM judges favour their own family). */
  maker: string;
}

export interface JudgeAssignment {
  slot: JudgeSlot;
  engineId: string;
  maker: string;
  /** Set when the slot's own engine recused itself; `replacedBy` is null when no judge of another maker was free. */
  recusal: { engineId: string; maker: string; replacedBy: string | null } | null;
}

/**
 * The pool's first engines fill the slots in order; one whose maker made an answer it would judge recuses itself
 * and the next reserve (a pool engine beyond the slots) of another maker takes its place. When no reserve is free it
 * judges anyway and the recusal says so, so the run reports it rather than hiding it.
 */
export function assignJudges(
  slots: readonly JudgeSlot[],
  pool: readonly JudgeCandidate[],
  answeringMakers: ReadonlySet<string>,
): JudgeAssignment[] {
  const defaults = slots.map((_, i) => pool[i % pool.length]);
  const reserves = pool.filter((c) => !defaults.includes(c));
  const used = new Set<string>();
  return slots.map((slot, i): JudgeAssignment => {
    const own = defaults[i];
    if (!answeringMakers.has(own.maker)) return { slot, engineId: own.engineId, maker: own.maker, recusal: null };
    const free = reserves.find((c) => !answeringMakers.has(c.maker) && !used.has(c.engineId));
    if (free) used.add(free.engineId);
    const judge = free ?? own;
    return {
      slot,
      engineId: judge.engineId,
      maker: judge.maker,
      recusal: { engineId: own.engineId, maker: own.maker, replacedBy: free?.engineId ?? null },
    };
  });
}

/** A number from a text, so every (run, question, judge, repeat) draws its own order from the run's seed. */
function hashSeed(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * The order one judge sees `count` answers in at a repeat: a separate random order per judge and per pair of
 * repeats, reversed on the second repeat of each pair, so every position effect is measured against its mirror.
 * Returns answer indices in presentation order.
 */
export function presentationOrder(seed: string, questionId: string, slot: JudgeSlot, repeat: number, count: number): number[] {
  const pair = Math.floor((repeat - 1) / 2);
  const base = shuffled(
    Array.from({ length: count }, (_, i) => i),
    seededRandom(hashSeed(`${seed}|${questionId}|${slot}|${pair}`)),
  );
  return (repeat - 1) % 2 === 1 ? base.reverse() : base;
}

/** Marks a run's judging request, so any engine (the simulated ones included) can recognise what is asked. */
export const RUN_JUDGE_TAG = 'QUORUM-RUN-JUDGE-V1';
const LABELS = ['A', 'B', 'C', 'D', 'E', 'F'] as const;

export function answerLabel(position: number): string {
  return LABELS[position] ?? String(position + 1);
}

/** The labels of `shown` answers in presentation order: A, B, … */
export function answerLabels(shown: number): string[] {
  return Array.from({ length: shown }, (_, i) => answerLabel(i));
}

/**
 * The judge sees the question, the reference answer and the anonymous answers in presentation order. Pairwise asks
 * which of two is better (or a tie); plurality asks for the best of all.
 */
export function runJudgePrompt(
  protocol: JudgingProtocol,
  question: string,
  reference: string,
  answersInOrder: readonly string[],
): ChatMessage[] {
  const ask =
    protocol === 'pairwise'
      ? 'Compare the two answers. Reply with JSON only: {"winner": "A" | "B" | "tie", "why": string}'
      : 'Pick the best answer. Reply with JSON only: {"winner": "<label>" | "tie", "why": string}';
  return [
    {
      role: 'system',
      content: `${RUN_JUDGE_TAG}\nYou judge anonymous answers to one question against its reference answer. Correctness against the reference comes first, then clarity. Answer order carries no meaning. ${ask}`,
    },
    {
      role: 'user',
      content: `Question:\n${question}\n\nReference answer: ${reference}\n\n${answersInOrder.map((a, i) => `Answer ${answerLabel(i)}:\n${a}`).join('\n\n')}`,
    },
  ];
}

/**
 * The reply asked for, `{"winner": string, "why"?: string}`, checked by hand: this module is in the workflow bundle,
 * whose modules are evaluated again for every workflow started, and a schema library there (zod, ~25k lines) was
 * evaluated for every deliberation too.
 */
function isRunJudgeReply(v: unknown): v is { winner: string; why?: string } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const { winner, why } = v as Record<string, unknown>;
  return typeof winner === 'string' && (why === undefined || typeof why === 'string');
}

/**
 * The mode's verdict from a judge's reply: `winner` names a presented label or `tie`. The mode's answer sits at
 * presentation position `modeAt`. Undefined when the reply is not the JSON asked for or names no shown label.
 */
export function readRunVerdict(reply: string, shown: number, modeAt: number): Verdict | undefined {
  const r = jsonObjectIn(reply);
  if (!isRunJudgeReply(r)) return undefined;
  const winner = r.winner.trim().toUpperCase();
  if (winner === 'TIE') return 'tie';
  const position = answerLabels(shown).indexOf(winner);
  if (position < 0) return undefined;
  return position === modeAt ? 'win' : 'loss';
}

/** A tie counts half (DESIGN §10). */
export function verdictScore(v: Verdict): number {
  return v === 'win' ? 1 : v === 'tie' ? 0.5 : 0;
}
