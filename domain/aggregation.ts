import type { Judgment } from './judge';
import { lastUserText, type ChatMessage } from './messages';
import { SYNTHESIS_TAG, type LabelledAnswer } from './prompts';
import { answerKey, hasFinalAnswerMarker } from './questions/check';
import type { Question } from './questions/types';
import type { JsonSchema, ReplySchema } from './reply-schemas';

/**
 * Issue 52: a panel that keeps the answer. The seats' answers are read by the question's answer kind and voted; the
 * winning seat's text is returned as written (Self-Consistency, arXiv 2203.11171; USC, 2311.17311), a pinned
 * synthesis may rewrite it only when it keeps that answer. Pure: reading, counting, the ballot and pinned prompts and
 * the guard; workflows/panel.ts runs the calls.
 */

/** What a caller may declare (`svc.answer_kind`). */
export const CALLER_ANSWER_KINDS = ['choice', 'yes_no', 'number', 'short_text'] as const;
export type CallerAnswerKind = (typeof CALLER_ANSWER_KINDS)[number];
/** A run's questions add `math` (MATH-500's LaTeX answers). */
export type AnswerKindName = CallerAnswerKind | 'math';

/** How a seat's answer is read: its kind, and a choice question's options when they are known. */
export interface AnswerKind {
  kind: AnswerKindName;
  choices?: string[];
}

/**
 * A run question's kind, from its set: a benchmark set declares it; a generated family's answer reads by its
 * reference's shape (a number, else a short text, dates included).
 */
export function questionAnswerKind(q: Pick<Question, 'answerKind' | 'choices' | 'answer'>): AnswerKind {
  switch (q.answerKind) {
    case 'choice':
      return { kind: 'choice', ...(q.choices && { choices: q.choices }) };
    case 'yes-no':
      return { kind: 'yes_no' };
    case 'math':
      return { kind: 'math' };
    case 'number':
      return { kind: 'number' };
    default:
      return answerKey(`Final answer: ${q.answer}`)?.startsWith('number ') ? { kind: 'number' } : { kind: 'short_text' };
  }
}

/**
 * The answer a text gives, as a key two equal answers share (domain/questions/check.ts `answerKey`); undefined when
 * it gives none. Without a declared kind only an explicit `Final answer:` line is read: a stray number in prose is
 * never a vote.
 */
export function readAnswer(text: string, kind: AnswerKind | undefined): string | undefined {
  if (!kind) return hasFinalAnswerMarker(text) ? answerKey(text) : undefined;
  switch (kind.kind) {
    case 'choice':
      return answerKey(text, { answerKind: 'choice', choices: kind.choices ?? [] });
    case 'yes_no':
      return answerKey(text, { answerKind: 'yes-no' });
    case 'math':
      return answerKey(text, { answerKind: 'math' });
    case 'number': {
      const key = answerKey(text);
      return key?.startsWith('number ') ? key : undefined;
    }
    case 'short_text':
      return answerKey(text);
  }
}

/** A key as people read it: `number 42` → `42`, `text paris` → `paris`. */
export function shownAnswer(key: string): string {
  return key.replace(/^(number|date|text) /, '');
}

/** One seat's vote: the answer read from its text (or by the ballot call), null when it abstains. */
export interface SeatBallot<R extends string = string> {
  role: R;
  answer: string | null;
  readBy: 'text' | 'ballot' | null;
  /** Its text was cut by its output limit: among seats of the winning answer, an uncut text is returned first. */
  cut: boolean;
}

export interface Tally<R extends string = string> {
  answer: string;
  votes: number;
  /** The seats that gave it, in seat order. */
  seats: R[];
}

/** Every answer given, most votes first; on equal votes, the answer whose first seat comes first. */
export function tally<R extends string>(ballots: readonly SeatBallot<R>[]): Tally<R>[] {
  const by = new Map<string, Tally<R>>();
  for (const b of ballots) {
    if (b.answer === null) continue;
    const t = by.get(b.answer) ?? { answer: b.answer, votes: 0, seats: [] };
    t.votes += 1;
    t.seats.push(b.role);
    by.set(b.answer, t);
  }
  return [...by.values()].sort((a, b) => b.votes - a.votes);
}

export type VoteResult<R extends string> =
  | { kind: 'none' }
  | { kind: 'winner'; top: Tally<R> }
  /** Two or more answers with the most votes: the tie is broken among their seats only. */
  | { kind: 'tie'; tied: Tally<R>[] };

/** Plurality over the readable ballots; unreadable seats abstain. */
export function plurality<R extends string>(ballots: readonly SeatBallot<R>[]): VoteResult<R> {
  const counted = tally(ballots);
  if (counted.length === 0) return { kind: 'none' };
  const tied = counted.filter((t) => t.votes === counted[0].votes);
  return tied.length === 1 ? { kind: 'winner', top: counted[0] } : { kind: 'tie', tied };
}

/** The seat whose text speaks for an answer: the first of its seats whose text was not cut, else the first. */
export function speakerOf<R extends string>(t: Tally<R>, ballots: readonly SeatBallot<R>[]): R {
  const uncut = t.seats.find((r) => !ballots.find((b) => b.role === r)?.cut);
  return uncut ?? t.seats[0];
}

/** Whether a first wave settles the question: at least two seats, every one readable, all with one answer. */
export function waveAgrees(ballots: readonly SeatBallot[]): boolean {
  return ballots.length >= 2 && ballots.every((b) => b.answer !== null && b.answer === ballots[0].answer);
}

/**
 * The round's line when the seats were counted rather than judged: each label's share of the votes as its score
 * (0 for an abstention), divergence one minus the winner's share of the seats, converged when every seat gave the
 * one answer.
 */
export function voteJudgment(ballots: readonly { label: string; answer: string | null }[], winnerLabel: string): Judgment {
  const votes = (a: string | null): number => (a === null ? 0 : ballots.filter((b) => b.answer === a).length);
  const n = ballots.length;
  const winner = ballots.find((b) => b.label === winnerLabel);
  const top = votes(winner?.answer ?? null);
  const agreed = n > 0 && ballots.every((b) => b.answer !== null && b.answer === ballots[0].answer);
  return {
    scores: Object.fromEntries(ballots.map((b) => [b.label, Math.round((votes(b.answer) / n) * 1000) / 100])),
    best: winnerLabel,
    why: winner?.answer ? `Answer ${winnerLabel} gives the answer ${top} of ${n} seats gave (vote).` : `Answer ${winnerLabel} was chosen.`,
    divergence: n > 0 ? Math.round((1 - top / n) * 1000) / 1000 : 0,
    converged: agreed,
    contested: null,
    factualConflict: false,
  };
}

/** Marks a ballot request, so any engine (the simulated ones included) can recognise what is asked. */
export const BALLOT_TAG = 'QUORUM-BALLOT-V1';
/** A ballot is a few short values. */
export const BALLOT_MAX_OUTPUT = 120;

const LETTERS = 'ABCDEFGHIJ'.split('');

/** The values a ballot may read for one text: a choice's letters and yes/no as an enum, others as a short string. */
function ballotValue(kind: AnswerKind): JsonSchema {
  switch (kind.kind) {
    case 'choice':
      return { type: 'string', enum: LETTERS.slice(0, kind.choices?.length || LETTERS.length) };
    case 'yes_no':
      return { type: 'string', enum: ['yes', 'no'] };
    default:
      return { type: 'string', maxLength: 60 };
  }
}

/** The ballot's reply: for each label, the answer its text concludes, or null. */
export function ballotSchema(labels: readonly string[], kind: AnswerKind): ReplySchema {
  const value: JsonSchema = { anyOf: [{ type: 'null' }, ballotValue(kind)] };
  return {
    name: 'ballot',
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(labels.map((l) => [l, value])),
      required: [...labels],
    },
  };
}

const KIND_WORDS: Record<AnswerKindName, string> = {
  choice: 'the letter of the option it picks',
  yes_no: 'yes or no',
  number: 'the number it concludes',
  short_text: 'the short answer it concludes, in a few words',
  math: 'the final expression it concludes',
};

/** One short call that reads each text's answer, not the question's: it must not answer for a seat. */
export function ballotPrompt(messages: readonly ChatMessage[], answers: readonly LabelledAnswer[], kind: AnswerKind): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        `${BALLOT_TAG}\nFor each labelled reply below, report ${KIND_WORDS[kind.kind]}, as the reply itself states it. ` +
        'Do not answer the question yourself; report null for a reply that concludes nothing. ' +
        `Reply with JSON only: {${answers.map((a) => `"${a.label}": value or null`).join(', ')}}`,
    },
    {
      role: 'user',
      content: `Question:\n${lastUserText(messages)}\n\n${answers.map((a) => `Reply ${a.label}:\n${a.text}`).join('\n\n')}`,
    },
  ];
}

/** What a ballot reply reads for each label, normalised as a seat's own text would be; null where it read nothing. */
export function readBallot(text: string, labels: readonly string[], kind: AnswerKind): Record<string, string | null> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const obj = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  return Object.fromEntries(
    labels.map((l) => {
      const v = obj[l];
      const read = typeof v === 'string' || typeof v === 'number' ? readAnswer(`Final answer: ${v}`, kind) : undefined;
      return [l, read ?? null];
    }),
  );
}

/** The winning text, with the answer the ballot read stated after it, so the answer returned can be read. */
export function withAnswerLine(text: string, key: string): string {
  return `${text.trimEnd()}\n\nFinal answer: ${shownAnswer(key)}`;
}

/**
 * A synthesis pinned to the chosen answer (under SYNTHESIS_TAG, so the simulated engines read it as one): the engine rewrites the chosen seat's text into one reply, told the answer
 * it must keep; the format request comes last, where a small model reads it.
 */
export function pinnedSynthesisPrompt(messages: readonly ChatMessage[], chosen: string, answerKey: string | undefined): ChatMessage[] {
  const keep =
    answerKey === undefined
      ? 'Keep its conclusion exactly as it is.'
      : `The panel's answer is ${shownAnswer(answerKey)}: keep exactly that answer.`;
  const last =
    answerKey === undefined ? 'Answer the user directly.' : `End your reply with the line: Final answer: ${shownAnswer(answerKey)}`;
  return [
    {
      role: 'system',
      content: `${SYNTHESIS_TAG}\nRewrite the chosen answer below into the single best reply to the question. ${keep} Do not mention a panel, answers or labels.`,
    },
    { role: 'user', content: `Question:\n${lastUserText(messages)}\n\nChosen answer:\n${chosen}\n\n${last}` },
  ];
}

/** What became of a synthesis: written (method synthesis), kept (pinned and true to the answer), or why the seat's text stands. */
export const SYNTHESIS_FATES = ['none', 'written', 'kept', 'answer_differs', 'unreadable', 'cut', 'failed'] as const;
export type SynthesisFate = (typeof SYNTHESIS_FATES)[number];

/** The guard over a pinned synthesis: kept only when uncut and stating the chosen answer (when one was read). */
export function guardSynthesis(
  text: string,
  finish: 'stop' | 'length',
  chosen: string | undefined,
  kind: AnswerKind | undefined,
): Extract<SynthesisFate, 'kept' | 'answer_differs' | 'unreadable' | 'cut'> {
  if (finish === 'length') return 'cut';
  if (text.trim() === '') return 'unreadable';
  if (chosen === undefined) return 'kept';
  const got = readAnswer(text, kind);
  if (got === undefined) return 'unreadable';
  return got === chosen ? 'kept' : 'answer_differs';
}

/** How the answer was decided. */
export const DECIDED_BY = ['unanimous', 'plurality', 'tie_judge', 'tie_first', 'ballot', 'judge_select', 'judge_synthesis'] as const;
export type DecidedBy = (typeof DECIDED_BY)[number];

/** What the receipt says of how the answer was made (`svc.aggregation`). */
export interface AggregationRecord<R extends string = string> {
  method: 'synthesis' | 'select' | 'vote';
  /** The kind the seats were read by; null when none was declared (only `Final answer:` lines were read). */
  answerKind: AnswerKindName | null;
  ballots: { role: R; answer: string | null; readBy: 'text' | 'ballot' | null }[];
  /** Each answer given and its votes, most first. */
  votes: { answer: string; votes: number }[];
  winner: { role: R; answer: string | null };
  decidedBy: DecidedBy;
  /** Seats asked in round 1, and whether a first wave's agreement left the rest unasked. */
  seatsAsked: number;
  earlyStop: boolean;
  /**
   * The ballot call, when one ran: on the service's keys, in the call's tokens and bill, so, as the classifier's, it is
   * on the receipt in full (`quorum audit` accounts for it beside the seat rows).
   */
  ballotCall: { modelUsed: string; latencyMs: number; tokensIn: number; tokensOut: number; realCostMicros: number } | null;
  synthesis: SynthesisFate;
  /** The ballot read the answer: it was stated after the winning text. */
  answerLineAdded: boolean;
}
