import { createHash } from 'node:crypto';
import { simLatencyMs, type SimLatency } from '../../domain/sim-latency';
import { countMessagesTokens, decodeTokens, encodeTokens } from '../../domain/tokens';
import { classifyHeuristic } from '../../domain/classifier';
import { lastUserText } from '../../domain/messages';
import { CLASSIFY_TAG, JUDGE_TAG, SYNTHESIS_TAG } from '../../domain/prompts';
import { RUN_JUDGE_TAG } from '../../domain/run-judging';
import { EngineError } from '../errors';
import { schemaInstance } from './sim-json';
import type { ChatMessage, KnownAnswer } from '../types';
import { continuation, type AdapterCall, type AdapterOutput } from './common';

/**
 * Simulated engines (DESIGN §6): everything is decided by a SHA-256 of (engine id, messages), so the
 * same call always gives the same text, correctness and latency. Token counts come from the real
 * tokenizer; an answer longer than the output limit is cut to it and flagged `length`, as a provider would.
 */
export async function callSim(
  call: AdapterCall,
  knownAnswer: KnownAnswer | undefined,
  latency: SimLatency,
  attempt = 0,
  evenSkill?: number,
): Promise<AdapterOutput> {
  const { spec } = call;
  const seed = createHash('sha256')
    .update(spec.id)
    .update('\0')
    .update(JSON.stringify(call.messages.map((m) => [m.role, m.content])))
    // A seat's own seed draws another answer from the same engine, as a provider's sampling seed does.
    .update(call.seed === undefined ? '' : `\0seed ${call.seed}`)
    // So does another temperature or top_p (a caller's, issue 40); unset, the draw is as before.
    .update(call.temperature === undefined ? '' : `\0temperature ${call.temperature}`)
    .update(call.topP === undefined ? '' : `\0top_p ${call.topP}`)
    .digest();
  const rand = seededRandom(seed);
  const correctDraw = rand();
  const [u1, u2] = [rand(), rand()];
  // A hedged duplicate waits its own time; its answer stays the engine's answer to these messages.
  const timing = attempt > 0 ? seededRandom(createHash('sha256').update(seed).update(`attempt ${attempt}`).digest()) : undefined;
  const delayMs = timing ? simLatencyMs(latency, timing(), timing()) : simLatencyMs(latency, u1, u2);

  let full: string;
  const asked = (tag: string): boolean => call.messages.some((m) => m.role === 'system' && m.content.startsWith(tag));
  const shownFinals = asked(SYNTHESIS_TAG) ? majorityFinal(call.messages) : undefined;
  if (asked(JUDGE_TAG)) {
    full = judgeVerdict(call.messages, rand);
  } else if (asked(RUN_JUDGE_TAG)) {
    full = runVerdict(call.messages, rand);
  } else if (call.reply) {
    // A caller's structure (the synthesis or the express seat): a value valid against it, as an enforcing server gives.
    full = JSON.stringify(schemaInstance(call.reply.schema, rand, freeFormText(spec.id, call.messages, rand)));
  } else if (shownFinals !== undefined) {
    full = knownAnswerText(shownFinals);
  } else if (asked(CLASSIFY_TAG)) {
    full = classification(call.messages, rand);
  } else if (knownAnswer) {
    const skill = evenSkill ?? spec.skill?.[knownAnswer.difficulty] ?? 0;
    const p = revisionSeesRightAnswer(call.messages, knownAnswer.answer) ? verifySkill(skill) : skill;
    const group = evenSkill === undefined ? spec.mistakeGroup : EVEN_MISTAKE_GROUP;
    full = knownAnswerText(
      correctDraw < p ? knownAnswer.answer : plausibleWrong(knownAnswer.answer, mistakeRandom(group, call.messages) ?? rand),
    );
  } else {
    full = freeFormText(spec.id, call.messages, rand);
  }

  const answer = stopped(full, call.stop);
  // Asked to continue what an earlier attempt wrote, it writes the rest of the same answer.
  const earlier = call.continueFrom ?? '';
  const rest = answer.startsWith(earlier) ? answer.slice(earlier.length) : answer;
  const tokens = encodeTokens(rest);
  const cut = tokens.length > call.maxOutputTokens;
  const text = cut ? decodeTokens(tokens.slice(0, call.maxOutputTokens)) : rest;
  if (call.onText) await writeOut(text, delayMs, call, call.onText);
  else await sleep(delayMs, call, spec.id);
  return {
    text,
    finish: cut ? 'length' : 'stop',
    tokensIn: countMessagesTokens(continuation(call).messages),
    tokensOut: cut ? call.maxOutputTokens : tokens.length,
    reasoningTokens: null,
  };
}

/** A streamed answer: word-sized pieces, each handed on at its share of the latency, so it is written over the call's time. */
async function writeOut(text: string, ms: number, call: AdapterCall, onText: (delta: string) => void): Promise<void> {
  const pieces = text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text]);
  if (pieces.length === 0) return sleep(ms, call, call.spec.id);
  // Each piece's time is set from the start, so timer granularity never adds up over a long answer.
  const started = performance.now();
  for (const [i, piece] of pieces.entries()) {
    await sleep(started + (ms * (i + 1)) / pieces.length - performance.now(), call, call.spec.id);
    onText(piece);
  }
}

/** The text up to the first stop sequence, as a provider stops before writing one (the sequence is not returned). */
function stopped(text: string, stop: readonly string[] | undefined): string {
  const at = Math.min(...(stop ?? []).map((s) => text.indexOf(s)).filter((i) => i >= 0));
  return Number.isFinite(at) ? text.slice(0, at) : text;
}

const EVEN_MISTAKE_GROUP = 'even-skill';

/**
 * A simulated judge: asked in Quorum's judge format, it scores the labelled answers it was shown and replies
 * with the JSON verdict the format asks for, deterministically like every sim answer.
 */
function judgeVerdict(messages: readonly ChatMessage[], rand: () => number): string {
  const shown = messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');
  const answers = [...shown.matchAll(/^Answer ([A-Z]):\n([^\n]*)/gm)].map((m) => ({ label: m[1] ?? '?', first: m[2] ?? '' }));
  const scores: Record<string, number> = {};
  for (const a of answers) scores[a.label] = Math.round((4 + rand() * 6) * 10) / 10;
  const ranked = [...answers].sort((x, y) => (scores[y.label] ?? 0) - (scores[x.label] ?? 0));
  const best = ranked[0]?.label ?? 'A';
  const worst = ranked[ranked.length - 1];
  const divergence = Math.round(rand() * 0.7 * 1000) / 1000;
  const converged = divergence < 0.35;
  return JSON.stringify({
    scores,
    best,
    why: `Answer ${best} is the most complete and internally consistent.`,
    divergence,
    converged,
    contested:
      !converged && worst && worst.label !== best
        ? { label: worst.label, quote: worst.first.slice(0, 120), why: 'Its central claim is not supported by the other answers.' }
        : null,
    factual_conflict: !converged && rand() < 0.2,
  });
}

/** The labelled answers a judge or synthesiser was shown, each with its text up to the next label. */
function shownAnswers(messages: readonly ChatMessage[]): { label: string; text: string }[] {
  const shown = messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');
  return [...shown.matchAll(/^Answer ([A-Z]):\n([\s\S]*?)(?=\n\nAnswer [A-Z]:\n|\n\nThe judge preferred|(?![\s\S]))/gm)].map((m) => ({
    label: m[1] ?? '?',
    text: m[2] ?? '',
  }));
}

/** The `Final answer:` line of a known-answer reply, normalised for comparison. */
function finalOf(text: string): string | undefined {
  return /Final answer:\s*(.+)\s*$/im
    .exec(text)?.[1]
    ?.trim()
    .toLowerCase()
    .replace(/[.\s]+$/, '');
}

/**
 * A simulated synthesiser over known-answer replies: the most common final answer among the seats (ties go to the
 * judge's preferred answer), which is what makes a panel of independent engines beat its best seat alone.
 * Undefined when the seats gave no final answers (a free-form question).
 */
function majorityFinal(messages: readonly ChatMessage[]): string | undefined {
  const finals = shownAnswers(messages).map((a) => ({ label: a.label, final: finalOf(a.text) }));
  if (finals.length === 0 || finals.some((f) => f.final === undefined)) return undefined;
  const preferred = /The judge preferred answer ([A-Z])/.exec(messages.map((m) => m.content).join('\n'))?.[1];
  const count = (v: string | undefined): number => finals.filter((f) => f.final === v).length;
  const ranked = [...finals].sort(
    (x, y) => count(y.final) - count(x.final) || Number(y.label === preferred) - Number(x.label === preferred),
  );
  return ranked[0].final;
}

/**
 * A simulated run judge: it reads the reference answer and prefers an answer whose final answer matches it, and is
 * right most of the time (90%); otherwise, and when the answers are equally right, it calls a tie or picks at random.
 */
function runVerdict(messages: readonly ChatMessage[], rand: () => number): string {
  const reference = /Reference answer: ([^\n]*)/
    .exec(messages.map((m) => m.content).join('\n'))?.[1]
    ?.trim()
    .toLowerCase()
    .replace(/[.\s]+$/, '');
  const answers = shownAnswers(messages);
  const right = answers.filter((a) => finalOf(a.text) === reference);
  const draw = rand();
  let winner: string;
  if (answers.length === 0) winner = 'tie';
  // One side is right: the judge sees it most of the time, else errs to a tie or a random pick.
  else if (right.length > 0 && right.length < answers.length)
    winner = draw < 0.9 ? pick(right, rand).label : draw < 0.95 ? 'tie' : pick(answers, rand).label;
  // Equally right or wrong against the reference: a tie, bar the odd arbitrary pick.
  else winner = draw < 0.9 ? 'tie' : pick(answers, rand).label;
  return JSON.stringify({
    winner,
    why: winner === 'tie' ? 'The answers are equally good.' : `Answer ${winner} matches the reference best.`,
  });
}

/**
 * Checking an answer is easier than finding it: a seat revising its answer (a critique round) that was shown the
 * right final answer (its own or a panelist's) recognises it with this probability, closing 70% of the gap from its
 * skill to certainty. This is the mechanism that lets a deliberating panel beat its strongest seat alone.
 */
function verifySkill(skill: number): number {
  return skill + (1 - skill) * 0.7;
}

function revisionSeesRightAnswer(messages: readonly ChatMessage[], reference: string): boolean {
  const own = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
  if (own.length === 0) return false;
  const target = reference
    .trim()
    .toLowerCase()
    .replace(/[.\s]+$/, '');
  return [...own, ...shownAnswers(messages).map((a) => a.text)].some((t) => finalOf(t) === target);
}

/** A simulated small classifier: the heuristic's reading of the prompt, with a little deterministic noise. */
function classification(messages: readonly ChatMessage[], rand: () => number): string {
  const h = classifyHeuristic(messages.filter((m) => m.role === 'user'));
  const difficulty = Math.min(1, Math.max(0, Math.round((h.difficulty + (rand() - 0.5) * 0.1) * 1000) / 1000));
  return JSON.stringify({ difficulty, task_type: h.taskType, hallucination_risk: h.hallucinationRisk, needs_search: h.grounding });
}

/** The answer line a known-answer checker can find, after a sentence of (simulated) working. */
export function knownAnswerText(answer: string): string {
  return `Working through the question step by step, the result is ${answer}.\n\nFinal answer: ${answer}`;
}

/** Engines of one mistake group draw their wrong answer from the question alone, so they agree on it. */
function mistakeRandom(group: string | undefined, messages: readonly ChatMessage[]): (() => number) | undefined {
  if (!group) return undefined;
  return seededRandom(createHash('sha256').update(group).update('\0').update(lastUserText(messages)).digest());
}

/** A uniform stream in (0, 1): the 32 bytes of the hash seed an xorshift128 generator. */
function seededRandom(seed: Buffer): () => number {
  let [a, b, c, d] = [seed.readUInt32BE(0), seed.readUInt32BE(4), seed.readUInt32BE(8), seed.readUInt32BE(12) || 1];
  return () => {
    const t = a ^ (a << 11);
    [a, b, c] = [b, c, d];
    d = (d ^ (d >>> 19) ^ t ^ (t >>> 8)) >>> 0;
    return (d + 0.5) / 2 ** 32;
  };
}

function pick<T>(items: readonly T[], rand: () => number): T {
  return items[Math.floor(rand() * items.length)] as T;
}

/** A wrong answer of the same shape as the right one (a nearby number, a shifted date, an edited word). */
export function plausibleWrong(answer: string, rand: () => number): string {
  const trimmed = answer.trim();
  const offset = pick([1, 2, 3, 5, 10], rand) * (rand() < 0.5 ? -1 : 1);
  if (/^-?\d+$/.test(trimmed)) return String(BigInt(trimmed) + BigInt(offset));
  const decimal = /^(-?\d*)\.(\d+)$/.exec(trimmed);
  if (decimal) {
    const places = decimal[2]?.length ?? 1;
    return (Number(trimmed) + offset / 10 ** places).toFixed(places);
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(trimmed)) {
    const date = new Date(`${trimmed}T00:00:00Z`);
    if (!Number.isNaN(date.getTime())) return new Date(date.getTime() + offset * 86_400_000).toISOString().slice(0, 10);
  }
  const words = trimmed.split(/\s+/);
  if (words.length > 1) {
    const swapped = [...words.slice(1), words[0]].join(' ');
    if (swapped.toLowerCase() !== trimmed.toLowerCase()) return swapped;
  }
  const reversed = [...trimmed].reverse().join('');
  return reversed.toLowerCase() !== trimmed.toLowerCase() ? reversed : `${trimmed}${pick(['s', 'e', 'x'], rand)}`;
}

const STOP_WORDS = new Set([
  'about',
  'after',
  'again',
  'their',
  'there',
  'these',
  'those',
  'which',
  'while',
  'would',
  'could',
  'should',
  'where',
  'being',
  'other',
  'please',
  'every',
  'explain',
  'answer',
  'question',
]);

const SENTENCES: readonly string[] = [
  'The central point is {a}: it shapes how {b} should be read.',
  'A careful reading starts from {a} and checks it against {b}.',
  'The evidence on {a} is mixed, so a measured answer is safer than a bold one.',
  'In practice, {a} matters more than {b} in most situations.',
  'A common mistake is to treat {a} and {b} as the same thing.',
  'A short example helps: take {a}, change one assumption, and watch {b} move.',
  'The most defensible conclusion is that {a} depends on context.',
  'If {a} is uncertain, the first step is to pin down {b}.',
  'Step by step: define {a}, look at {b}, then compare the two.',
  'Overall, the answer turns on {a}.',
];

/** A readable, deterministic paragraph built from the last user turn's own words. */
function freeFormText(engineId: string, messages: readonly ChatMessage[], rand: () => number): string {
  const prompt = lastUserText(messages);
  const words = [...new Set((prompt.toLowerCase().match(/[a-z][a-z'-]{4,}/g) ?? []).filter((w) => !STOP_WORDS.has(w)))];
  const topic = prompt.replace(/\s+/g, ' ').trim().slice(0, 80) || 'the question';
  const term = (): string => (words.length > 0 ? pick(words, rand) : 'the question');
  const count = 3 + Math.floor(rand() * 6);
  const body: string[] = [];
  for (let i = 0; i < count; i += 1) body.push(pick(SENTENCES, rand).replace('{a}', term()).replace('{b}', term()));
  return `[${engineId}] A simulated answer to "${topic}".\n\n${body.join(' ')}`;
}

function sleep(ms: number, call: AdapterCall, engineId: string): Promise<void> {
  const check = (): EngineError | undefined => {
    if (call.signal?.aborted) return new EngineError('aborted', `${engineId}: request cancelled by the caller`, { engineId });
    if (call.deadline.aborted) return new EngineError('timeout', `${engineId}: no answer before the deadline`, { engineId });
    return undefined;
  };
  const early = check();
  if (early) return Promise.reject(early);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      cleanup();
      reject(check());
    };
    const cleanup = (): void => {
      call.deadline.removeEventListener('abort', onAbort);
      call.signal?.removeEventListener('abort', onAbort);
    };
    const timer = setTimeout(() => {
      cleanup();
      resolve();
    }, ms);
    call.deadline.addEventListener('abort', onAbort, { once: true });
    call.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
