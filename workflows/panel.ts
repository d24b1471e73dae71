import { deprecatePatch, isCancellation, patched, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { AnswerStream } from '../activities/answer-stream';
import type { DeliberationActivities, EngineCallInput, EngineCallResult } from '../activities/deliberation';
import {
  BALLOT_MAX_OUTPUT,
  ballotPrompt,
  ballotSchema,
  guardSynthesis,
  pinnedSynthesisPrompt,
  plurality,
  readAnswer,
  readBallot,
  speakerOf,
  tally,
  voteJudgment,
  waveAgrees,
  withAnswerLine,
  type AggregationRecord,
  type AnswerKind,
  type DecidedBy,
  type SeatBallot,
  type SynthesisFate,
} from '../domain/aggregation';
import type { Lane } from '../domain/classifier';
import type { StepEvent } from '../domain/deliberation-events';
import type { CostMeter, ProjectedCall } from '../domain/cost-meter';
import { PLATFORM_FEE_PPM, platformFeeMicros } from '../domain/fees';
import { heuristicJudgment, type Judgment } from '../domain/judge';
import { lastUserText, type ChatMessage } from '../domain/messages';
import type { Aggregation, ModeConfig, Quorum, SeatTuning } from '../domain/modes';
import { replySchemaOf, withFormatInstruction, type AnswerOptions, type Sampling } from '../domain/answer-options';
import type { PanelResult, RoundSummary, SeatPass, SeatRole, StaffCall, Unavailable } from '../domain/outcome';
import { seededRandom, shuffled } from '../domain/prng';
import { critiquePrompt, judgePrompt, seatPrompt, synthesisPrompt, type LabelledAnswer } from '../domain/prompts';
import type { Seating, SeatAssignment } from '../domain/seat-assignment';
import { firstAnswering } from './engine-chain';
import { ENGINE_CALL, ENGINE_CALL_LOCAL } from './engine-call-policy';
import { overAllTries, untilDone } from './local-activity-timeouts';
import { hedged } from './hedge';
import { untilQuorumInTask, untilQuorumScoped } from './quorum';

/**
 * The panel: seats, judge, critique rounds and synthesis, with no billing. A function the deliberation workflow
 * and a test run's question workflow both call, not a child workflow: a child would add a workflow start, its
 * own history and two server round trips to every deliberation, where the panel needs none of a child's
 * isolation (it holds no money; its caller settles or scores what it returns).
 */

// Seat, judge and synthesis calls: see ENGINE_CALL (a permanent failure moves the seat to its backup), and
// ENGINE_CALL_LOCAL for the same calls inside the workflow's task.
const engineCalls = proxyActivities<DeliberationActivities>(ENGINE_CALL);
const localEngineCalls = proxyLocalActivities<DeliberationActivities>(ENGINE_CALL_LOCAL);
// Grounding is a search: short, and the panel goes on without it if it keeps failing.
const GROUNDING = { startToCloseTimeout: '20 seconds', retry: { maximumAttempts: 2 } } as const;
const { ground } = proxyActivities<DeliberationActivities>(GROUNDING);
const { ground: groundLocally } = proxyLocalActivities<DeliberationActivities>(overAllTries(GROUNDING));
// One read of what an answer's stream holds, on a path only a failed call takes: retried like any short Postgres step.
const { streamedAnswer } = proxyLocalActivities<DeliberationActivities>(
  untilDone({ initialInterval: '200 milliseconds', maximumInterval: '10 seconds' }),
);

const LABELS = ['A', 'B', 'C'] as const;
/** A judgment is a short structured verdict. */
const JUDGE_MAX_OUTPUT = 600;
/**
 * Form A's ceiling is checked before each step from token counts the panel already has (the prompt, each answer's
 * reported output, the grounding snippets); this bounds what Quorum's own instructions add around them (the
 * longest, the judge's, is about 130 tokens).
 */
const PROMPT_TEMPLATE_TOKENS = 150;

export interface PanelInput {
  orgId: string;
  messages: ChatMessage[];
  /** Counted by the API with the engines' tokenizer (the workflow has none). */
  promptTokens: number;
  config: ModeConfig;
  lane: Lane;
  seating: Seating;
  /** Search before the seats answer (the classifier asked for it and the mode allows it). */
  ground: boolean;
  meter: CostMeter;
  /** Seeds the judge's answer order; drawn by the caller from the workflow's deterministic random. */
  judgeSeed: number;
  /** A run's question: every seat pass carries its reference for `sim` engines (never sent to a provider). */
  knownAnswer?: EngineCallInput['knownAnswer'];
  /** Runs hedge slow engine calls after this long (see hedge.ts); deliberations do not. */
  hedgeAfterMs?: number;
  /** Engine calls as local activities (ENGINE_CALL_LOCAL): a deliberation's; a run's questions hedge ordinary ones. */
  localCalls?: boolean;
  /**
   * What the caller asked of the answer (issue 40): the seats and the synthesis sample as asked, every call that may
   * write the answer keeps to its output limit, and the one that writes it (the synthesis, or the express lane's seat)
   * is asked for its structure. Absent: the panel runs as the mode says.
   */
  answer?: AnswerOptions;
  /**
   * How the seats' answers are read for a mode's `aggregation` (issue 52): a run question's kind, or the caller's
   * `svc.answer_kind`; absent, only explicit `Final answer:` lines are read.
   */
  answerKind?: AnswerKind;
  /** Told of each step as it happens (a seat answered, judging, a critique round, synthesis); no effect on the panel. */
  onStep?: (step: PanelStep) => void;
  /** Told of each step as it ends, for the caller's stream (issue 40 item 2); no effect on the panel. */
  onEvent?: (event: StepEvent) => void;
  /**
   * Where the call that writes the answer (the express lane's seat, a synthesis whose text is the answer) streams it
   * as it is written (issue 53 item 4); absent, or undefined when no one can watch: not streamed.
   */
  answerStream?: () => AnswerStream | undefined;
  /** Where the panel records what answered as it answers: a deliberation cancelled mid-panel bills it (issue 40). */
  record?: PanelRecord;
}

/** What answered so far: every seat pass, in order, and the judge's latest call. */
export interface PanelRecord {
  passes: SeatPass[];
  judge: StaffCall | null;
}

export type PanelStep =
  | { stage: 'seats' | 'critique'; round: number; seats: number; seatsAnswered: number }
  | { stage: 'judging'; round: number }
  | { stage: 'synthesising' };

interface SeatState {
  assignment: SeatAssignment;
  /** Position in the seat's engine chain; moves forward on a permanent failure. */
  at: number;
  failures: string[];
  latest: SeatPass | null;
  /** A cut answer billed while its retry with more room is out: the seat's row carries it if the retry is late. */
  pending?: EngineCallResult;
  /** A first wave agreed and the seat was never asked (issue 52). */
  notAsked?: boolean;
  /**
   * The latest answer's own output tokens: what a prompt that quotes it reads. Not the pass's `tokensOut`, which also
   * counts a cut attempt that was retried; ceiling checks read this, as they always have, so they replay unchanged.
   */
  answerTokens: number;
}

/**
 * A seat's row: every attempt it was billed for (a cut answer and its retry with more room) is in its tokens and
 * cost, so the rows plus staff add up to the call's usage and bill; the content and finish are the final attempt's.
 */
function seatPass(s: SeatState, round: number, first: EngineCallResult, final: EngineCallResult): SeatPass {
  const attempts = first === final ? [first] : [first, final];
  const sum = (f: (r: EngineCallResult) => number): number => attempts.reduce((n, r) => n + f(r), 0);
  const cost = sum((r) => r.costMicros);
  const fallback = final.engineId !== s.assignment.designed;
  return {
    role: s.assignment.role,
    round,
    modelUsed: final.engineId,
    originalModel: fallback ? s.assignment.designed : null,
    fallbackUsed: fallback,
    tokensIn: sum((r) => r.tokensIn),
    tokensOut: sum((r) => r.tokensOut),
    startedAt: first.startedAt,
    endedAt: final.endedAt,
    latencyMs: final.latencyMs,
    judgeScore: null,
    isBest: false,
    source: final.source,
    realCostMicros: cost,
    feeRatePpm: PLATFORM_FEE_PPM[final.source],
    feeMicros: platformFeeMicros(cost, final.source),
    content: final.text,
    finish: final.finish,
    ...(s.assignment.tuning && { tuning: s.assignment.tuning }),
  };
}

function staffCall(r: EngineCallResult, designed: string, latencyMs: number): StaffCall {
  const fallback = r.engineId !== designed;
  return { modelUsed: r.engineId, latencyMs, fallbackUsed: fallback, originalModel: fallback ? designed : null };
}

/** Step 3's result: what every seat is given of the search, and what the receipt says of it. */
interface Grounding {
  snippets: string[];
  /** The snippets' size, counted into Form A's check before a critique round. */
  tokens: number;
  staff: PanelResult['staff']['grounding'];
}

/**
 * The panel's state, handed from step to step: each step reads it and records in it what it did, so every change
 * to it is made by a named step below.
 */
interface PanelState {
  readonly input: PanelInput;
  readonly grounding: Grounding;
  /** Draws each judgment's answer order from the recorded seed. */
  readonly random: () => number;
  readonly seats: SeatState[];
  /** Every seat pass, in the order they answered. */
  readonly passes: SeatPass[];
  /** The billed rows of seats a quorum left behind (workflows/quorum.ts), each with why. */
  readonly late: SeatPass[];
  readonly deliberation: RoundSummary[];
  readonly staffUnavailable: Unavailable[];
  /** Seat passes run so far; judging is not a round (DESIGN §5 step 7). */
  rounds: number;
  /** The seats whose latest answer is in play: those that answered the last round. */
  answered: SeatState[];
  /** The last round's judgment; null until a judge reads one (never on the express lane). */
  judgment: Judgment | null;
  divergenceFirst: number | null;
  /** Each seat's anonymous label in the last judgment. */
  labels: PanelResult['labels'];
  judgedBy: PanelResult['judgedBy'];
  judgeCall: StaffCall | null;
  /** Every judge call's latency, summed over the rounds: the receipt's judge line. */
  judgeLatency: number;
  /** The mode's aggregation on the panel lane (issue 52); undefined: judge and synthesis as before it. */
  readonly aggregation: Aggregation | undefined;
  /** Round 1's seats asked, and whether a first wave's agreement left the rest unasked. */
  seatsAsked: number;
  earlyStop: boolean;
}

/** DESIGN §5 steps 3 and 5–8: grounding, round 1, judge, critique rounds, synthesis. */
export async function runPanel(input: PanelInput): Promise<PanelResult> {
  const panel = startPanel(input, await groundQuestion(input));
  // Round 1: every seat in parallel, on the same prompt (a first wave's seats first, when the mode asks one).
  panel.answered = await firstRound(panel, seatPrompt(input.messages, panel.grounding.snippets));
  panel.rounds = 1;
  if (panel.answered.length > 0 && input.lane === 'panel') {
    panel.divergenceFirst = (await assessRound(panel, true)).divergence;
    await critiqueRounds(panel);
  } else if (panel.answered.length > 0) {
    recordRound(panel, 1, null);
  }
  const result = panelResult(panel);
  // No seat answered: the caller decides (a deliberation abandons, a run's question scores an empty answer).
  if (panel.answered.length === 0) return result;
  const counted = panel.aggregation && panel.aggregation.method !== 'synthesis' ? panel.aggregation : undefined;
  return counted ? aggregationStep(panel, result, counted) : synthesisStep(panel, result);
}

/**
 * Round 1. With a first wave (issue 52 item 4), its seats answer first; the rest are asked only when the wave's
 * answers are not all readable and equal. Seats never asked are not billed.
 */
async function firstRound(panel: PanelState, prompt: ChatMessage[]): Promise<SeatState[]> {
  const ask = (seats: SeatState[]): Promise<SeatState[]> =>
    seatRound(
      panel,
      1,
      seats,
      seats.map(() => prompt),
    );
  const wave = panel.aggregation?.firstWave;
  if (wave === undefined || panel.seats.length <= wave) return ask(panel.seats);
  const first = await ask(panel.seats.slice(0, wave));
  if (first.length === wave && waveAgrees(ballotsOf(panel, first))) {
    for (const s of panel.seats.slice(wave)) s.notAsked = true;
    panel.seatsAsked = wave;
    panel.earlyStop = true;
    return first;
  }
  const more = await ask(panel.seats.slice(wave));
  return panel.seats.filter((s) => first.includes(s) || more.includes(s));
}

/** Each answering seat's answer as its own text states it, read by the question's kind. */
function ballotsOf(panel: PanelState, seats: readonly SeatState[]): SeatBallot<SeatRole>[] {
  return seats.map((s) => {
    const answer = readAnswer(s.latest?.content ?? '', panel.input.answerKind);
    return {
      role: s.assignment.role,
      answer: answer ?? null,
      readBy: answer === undefined ? null : 'text',
      cut: s.latest?.finish === 'length',
    };
  });
}

/** A round's reading: counted when the mode votes (no engine call), judged otherwise. */
function assessRound(panel: PanelState, allowEngine: boolean): Promise<Judgment> {
  return panel.aggregation?.method === 'vote' ? Promise.resolve(countRound(panel)) : judgeRound(panel, allowEngine);
}

/** A voting mode's round: the seats' answers counted under labels in seat order, the round recorded as the heuristic's. */
function countRound(panel: PanelState): Judgment {
  const { answered } = panel;
  panel.labels = Object.fromEntries(answered.map((s, i) => [s.assignment.role, LABELS[i]]));
  const ballots = ballotsOf(panel, answered);
  const vote = plurality(ballots);
  const winner = vote.kind === 'winner' ? speakerOf(vote.top, ballots) : answered[0].assignment.role;
  const labelled = ballots.map((b) => ({ label: panel.labels[b.role] ?? '?', answer: b.answer }));
  panel.judgedBy = 'heuristic';
  panel.judgment = voteJudgment(labelled, panel.labels[winner] ?? 'A');
  recordRound(panel, panel.rounds, panel.judgment);
  return panel.judgment;
}

function startPanel(input: PanelInput, grounding: Grounding): PanelState {
  return {
    input,
    grounding,
    random: seededRandom(input.judgeSeed),
    seats: input.seating.seats.map((p) => ({ assignment: p, at: 0, failures: [], latest: null, answerTokens: 0 })),
    passes: input.record?.passes ?? [],
    late: [],
    deliberation: [],
    staffUnavailable: [],
    rounds: 0,
    answered: [],
    judgment: null,
    divergenceFirst: null,
    labels: {},
    judgedBy: input.lane === 'express' ? 'express_lane' : 'heuristic',
    judgeCall: null,
    judgeLatency: 0,
    aggregation: input.lane === 'panel' ? input.config.aggregation : undefined,
    seatsAsked: input.seating.seats.length,
    earlyStop: false,
  };
}

/** Step 3: one search before the seats answer; the panel goes on without it if it keeps failing. */
async function groundQuestion(input: PanelInput): Promise<Grounding> {
  const none: Grounding = { snippets: [], tokens: 0, staff: { fired: false, modelUsed: null } };
  if (!input.ground) return none;
  let grounding = none;
  try {
    const g = await (input.localCalls ? groundLocally : ground)({ query: lastUserText(input.messages).slice(0, 500) });
    grounding = { snippets: g.snippets, tokens: g.tokens, staff: { fired: g.fired, modelUsed: g.source } };
  } catch (err) {
    if (isCancellation(err)) throw err;
  }
  input.onEvent?.({ type: 'grounded', fired: grounding.staff.fired, snippets: grounding.snippets.length });
  return grounding;
}

/**
 * Step 5, and each critique round's seat pass: the seats in parallel, each on its own prompt; those that answered.
 * With a quorum smaller than the round, the round ends once the quorum has answered and its grace has passed.
 */
async function seatRound(panel: PanelState, round: number, seats: SeatState[], prompts: ChatMessage[][]): Promise<SeatState[]> {
  const { input } = panel;
  const quorum = input.config.quorum;
  if (!quorum || seats.length <= quorum.seats) {
    const answers = await Promise.all(seats.map((s, i) => runSeat(panel, s, round, prompts[i], seats.length)));
    return seats.filter((_, i) => answers[i] !== undefined);
  }
  const startedAt = new Date().toISOString();
  // Names the round's calls in the worker that runs them (activities/quorum-rounds.ts).
  const key = input.localCalls ? `${workflowInfo().runId}/${round}` : undefined;
  const calls = seats.map((s, i) => () => runSeat(panel, s, round, prompts[i], seats.length, key));
  const settled = key
    ? await untilQuorumInTask(calls, quorum.seats, {
        wait: () => localEngineCalls.quorumGrace({ round: key, ms: quorum.graceMs }),
        release: () => localEngineCalls.quorumRelease({ round: key }),
      })
    : await untilQuorumScoped(calls, quorum.seats, quorum.graceMs);
  const late = seats.flatMap((s, i) => ('late' in settled[i] ? [{ s, messages: tunedMessages(s.assignment.tuning, prompts[i]) }] : []));
  if (late.length > 0) await billLate(panel, round, late, { quorum, inRound: seats.length, startedAt });
  return seats.filter((_, i) => {
    const r = settled[i];
    return 'answered' in r && r.answered !== undefined;
  });
}

/**
 * Late seats' cancelled calls, billed as docs/money.md says (one reading of the prompt, no output), each on a row of
 * its own with the reason; a round-1 seat that never answered also names it where the receipt lists seats unavailable.
 */
async function billLate(
  panel: PanelState,
  round: number,
  late: { s: SeatState; messages: ChatMessage[] }[],
  at: { quorum: Quorum; inRound: number; startedAt: string },
): Promise<void> {
  const { input } = panel;
  const { lateCalls } = input.localCalls ? localEngineCalls : engineCalls;
  const used = await lateCalls({
    calls: late.map(({ s, messages }) => {
      const engine = s.assignment.chain[s.at];
      return { engineId: engine.engineId, ownKey: engine.ownKey, messages, startedAt: at.startedAt };
    }),
  });
  late.forEach(({ s }, i) => {
    const call = used[i];
    input.meter.charge(call);
    const reason = `${call.engineId}: late, cancelled: ${at.quorum.seats} of ${at.inRound} seats had answered and the ${at.quorum.graceMs} ms grace had passed`;
    if (!s.latest) s.failures.push(reason);
    panel.late.push({ ...seatPass(s, round, s.pending ?? call, call), late: reason });
    s.pending = undefined;
  });
}

/** A tuned seat's own system prompt comes first, in the one leading system message some chat templates allow. */
function tunedMessages(tuning: SeatTuning | undefined, messages: ChatMessage[]): ChatMessage[] {
  if (!tuning?.systemPrompt) return messages;
  const [first, ...rest] = messages;
  if (first?.role === 'system') return [{ role: 'system', content: `${tuning.systemPrompt}\n\n${first.content}` }, ...rest];
  return [{ role: 'system', content: tuning.systemPrompt }, ...messages];
}

/** A tuned seat's sampling, only what the mode set (an untuned call's input, and its history, stay as they were). */
function sampling(tuning: SeatTuning | undefined): { temperature?: number; seed?: number } {
  return {
    ...(tuning?.temperature !== undefined && { temperature: tuning.temperature }),
    ...(tuning?.seed !== undefined && { seed: tuning.seed }),
  };
}

/** A caller's sampling as an engine call takes it; a seat's own tuning is added over it (the API refuses the two together). */
function callerSampling(s: Sampling | undefined): Pick<EngineCallInput, 'temperature' | 'topP' | 'seed' | 'stop'> {
  return {
    ...(s?.temperature !== undefined && { temperature: s.temperature }),
    ...(s?.topP !== undefined && { topP: s.topP }),
    ...(s?.seed !== undefined && { seed: s.seed }),
    ...(s?.stop !== undefined && { stop: s.stop }),
  };
}

/** A limit no larger than the caller's output limit, when one was set. */
function withinCaller(limit: number, answer: AnswerOptions | undefined): number {
  return answer?.maxOutputTokens === undefined ? limit : Math.min(limit, answer.maxOutputTokens);
}

/**
 * On the express lane the seat's answer is the answer: it is asked for the caller's structure, in words (the
 * messages) and the protocol's own way (`reply`).
 */
function expressFormat(input: PanelInput, messages: ChatMessage[]): Pick<EngineCallInput, 'messages' | 'reply'> {
  const format = input.lane === 'express' ? input.answer?.format : undefined;
  return format ? { messages: withFormatInstruction(messages, format), reply: replySchemaOf(format) } : { messages };
}

/** One seat's pass: its current engine, then backups on failure; a cut-off answer is retried once with twice the room. */
async function runSeat(
  panel: PanelState,
  s: SeatState,
  round: number,
  messages: ChatMessage[],
  inRound: number,
  quorumRound?: string,
): Promise<SeatPass | undefined> {
  const { input } = panel;
  const { seat } = input.localCalls ? localEngineCalls : engineCalls;
  const seatMax = withinCaller(input.config.seatMaxOutputTokens, input.answer);
  // A cut answer's retry gets twice the room, within the caller's limit: none is left when that limit cut it.
  const room = withinCaller(input.config.seatMaxOutputTokens * 2, input.answer);
  // Nothing of the seat's design can run here, and no stand-in may (production): say so on the receipt.
  if (s.assignment.chain.length === 0 && s.failures.length === 0)
    s.failures.push(`${s.assignment.designed}: no engine of this design can run here`);
  // The seat keeps its place in its chain from round to round: an engine that failed for good is not asked again.
  return firstAnswering(
    s.assignment.chain.slice(s.at),
    async (engine) => {
      // The express lane's seat writes the answer itself: its caller may watch it being written.
      const stream = input.lane === 'express' ? input.answerStream?.() : undefined;
      // lane and round label the worker's metrics; the call ignores them.
      const call = {
        orgId: input.orgId,
        engineId: engine.engineId,
        ownKey: engine.ownKey,
        ...expressFormat(input, tunedMessages(s.assignment.tuning, messages)),
        knownAnswer: input.knownAnswer,
        lane: input.lane,
        round,
        ...callerSampling(input.answer?.sampling),
        ...sampling(s.assignment.tuning),
        ...(quorumRound !== undefined && { quorumRound }),
        ...(stream && { stream }),
      };
      const first = await hedged(
        (attempt) => seat({ ...call, maxOutputTokens: seatMax, attempt: attempt || undefined }),
        input.hedgeAfterMs,
      );
      input.meter.charge(first);
      s.pending = first.finish === 'length' ? first : undefined;
      const final =
        first.finish === 'length' && room > seatMax
          ? await retryWithRoom(() => seat({ ...call, maxOutputTokens: room }), first, stream)
          : first;
      s.pending = undefined;
      if (final !== first) input.meter.charge(final);
      const pass = seatPass(s, round, first, final);
      panel.passes.push(pass);
      s.latest = pass;
      s.answerTokens = final.tokensOut;
      const seatsAnswered = panel.passes.filter((p) => p.round === round).length;
      input.onStep?.({ stage: round === 1 ? 'seats' : 'critique', round, seats: inRound, seatsAnswered });
      const { role } = s.assignment;
      input.onEvent?.({ type: 'seat_answered', round, role, model: final.engineId, seatsAnswered, seats: inRound, endedAt: final.endedAt });
      return { answer: pass };
    },
    {
      failed: (reason) => {
        s.failures.push(reason);
        s.at += 1;
      },
    },
  );
}

/**
 * A cut answer's retry with more room; when the retry fails for good, the cut answer stands as the seat's answer:
 * it was billed, so its row must carry it (issue 27 item 7), with what the retry streamed on from it (`stream`).
 */
async function retryWithRoom(
  retry: () => Promise<EngineCallResult>,
  cut: EngineCallResult,
  stream: AnswerStream | undefined,
): Promise<EngineCallResult> {
  try {
    return await retry();
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The change's old branch (the seat moved to its backup) retired: docs/cluster-operations.md, "Patches and local activities".
    deprecatePatch('cut-answer-stands-when-its-retry-fails');
    // What the retry streamed on from the cut before it failed was sent: it stands with the cut answer.
    const written = await streamedSince(stream);
    return written !== undefined && written.length > cut.text.length ? { ...cut, text: written } : cut;
  }
}

/**
 * What was streamed is what the receipt records (DESIGN §16): when the call writing a streamed answer fails for good,
 * the text it streamed is read back to stand as the answer, cut, since nothing that does not continue it may replace
 * it. Undefined when nothing was streamed there (no stream, none written yet, or an execution begun before this read).
 */
async function streamedSince(stream: AnswerStream | undefined): Promise<string | undefined> {
  if (!stream || !patched('streamed-answer-stands')) return undefined;
  const written = await streamedAnswer(stream);
  return written === '' ? undefined : written;
}

/** Everything every answer adds to a prompt that reads them all. */
function readingAll(panel: PanelState, answered: readonly SeatState[]): number {
  return panel.input.promptTokens + answered.reduce((n, s) => n + s.answerTokens, 0) + PROMPT_TEMPLATE_TOKENS;
}

/**
 * Step 6, for the round just run: the judge sees anonymous labels in an order drawn from the recorded seed; the
 * heuristic judges when no engine can, and alone when `allowEngine` is false (Form A's ceiling is reached).
 */
async function judgeRound(panel: PanelState, allowEngine: boolean): Promise<Judgment> {
  const { verdict, judgment, labels, endedAt } = await judgeSeats(panel, panel.answered, allowEngine);
  panel.labels = labels;
  panel.judgedBy = verdict ? 'llm' : 'heuristic';
  panel.judgment = judgment;
  recordRound(panel, panel.rounds, panel.judgment);
  panel.input.onEvent?.({
    type: 'judged',
    round: panel.rounds,
    judgedBy: verdict ? 'llm' : 'heuristic',
    converged: panel.judgment.converged,
    endedAt,
  });
  return panel.judgment;
}

/** The judge's call over some seats (a round's, or a vote's tied seats): its verdict, else the heuristic's. */
async function judgeSeats(
  panel: PanelState,
  answered: readonly SeatState[],
  allowEngine: boolean,
): Promise<{ verdict: Judgment | undefined; judgment: Judgment; labels: PanelResult['labels']; endedAt: string | null }> {
  const { input } = panel;
  const { judge } = input.localCalls ? localEngineCalls : engineCalls;
  input.onStep?.({ stage: 'judging', round: panel.rounds });
  const order = shuffled(answered, panel.random);
  const labels: PanelResult['labels'] = Object.fromEntries(order.map((s, i) => [s.assignment.role, LABELS[i]]));
  const labelled: LabelledAnswer[] = order.map((s, i) => ({ label: LABELS[i], text: s.latest?.content ?? '' }));
  const prompt = judgePrompt(input.messages, labelled);
  const tokensIn = readingAll(panel, answered);
  let endedAt: string | null = null;
  const verdict = await firstAnswering(
    allowEngine ? input.seating.judge.chain : [],
    async (engine) => {
      const r = await hedged(
        (attempt) =>
          judge({
            orgId: input.orgId,
            engineId: engine.engineId,
            ownKey: false,
            messages: prompt,
            maxOutputTokens: JUDGE_MAX_OUTPUT,
            labels: labelled.map((a) => a.label),
            attempt: attempt || undefined,
            lane: input.lane,
            round: panel.rounds,
          }),
        input.hedgeAfterMs,
      );
      input.meter.charge(r);
      endedAt = r.endedAt;
      panel.judgeLatency += r.latencyMs;
      panel.judgeCall = staffCall(r, input.seating.judge.designed, panel.judgeLatency);
      if (input.record) input.record.judge = panel.judgeCall;
      return r.judgment ? { answer: r.judgment } : { unusable: `${r.engineId} gave no usable verdict` };
    },
    {
      affords: (engine) => input.meter.affords([{ engine, tokensIn, maxOut: JUDGE_MAX_OUTPUT }]),
      failed: (reason) => {
        panel.staffUnavailable.push({ role: 'judge', reason });
      },
    },
  );
  return { verdict, judgment: verdict ?? heuristicJudgment(labelled), labels, endedAt };
}

/** A round's line in the deliberation: each pass's score under its seat's label, and whether the seats agree. */
function recordRound(panel: PanelState, round: number, j: Judgment | null): void {
  const inRound = panel.passes.filter((p) => p.round === round);
  for (const p of inRound) p.judgeScore = j ? (j.scores[panel.labels[p.role] ?? ''] ?? null) : null;
  panel.deliberation.push({
    round,
    seats: inRound.map((p) => ({ role: p.role, model: p.modelUsed, score: p.judgeScore })),
    divergence: j ? j.divergence : null,
    converged: j ? j.converged : null,
  });
}

/**
 * Step 7: critique rounds, as the mode says (always, or only while the seats are split): each seat still answering
 * reads the others' answers under their labels and revises, then the judge reads the round.
 */
async function critiqueRounds(panel: PanelState): Promise<void> {
  const { config, meter, messages } = panel.input;
  while (
    panel.rounds < config.rounds &&
    panel.answered.length > 1 &&
    (config.critique === 'always' || (config.critique === 'when_split' && !panel.judgment?.converged))
  ) {
    const current = panel.answered;
    const prompts = current.map((s) => {
      const others = current
        .filter((o) => o !== s)
        .map((o) => ({ label: panel.labels[o.assignment.role] ?? '?', text: o.latest?.content ?? '' }));
      return critiquePrompt(messages, panel.grounding.snippets, s.latest?.content ?? '', others);
    });
    // Each seat reads the question, the snippets and every current answer (its own and the others'), all counted.
    const tokensIn = readingAll(panel, current) + panel.grounding.tokens;
    const step: ProjectedCall[] = current.map((s) => ({ engine: s.assignment.chain[s.at], tokensIn, maxOut: config.seatMaxOutputTokens }));
    if (!meter.affords(step)) return;
    panel.input.onEvent?.({ type: 'critique_round', round: panel.rounds + 1, seats: current.length });
    const survivors = await seatRound(panel, panel.rounds + 1, current, prompts);
    // No seat could revise: the previous round's answers and judgment stand.
    if (survivors.length === 0) return;
    panel.rounds += 1;
    panel.answered = survivors;
    await assessRound(panel, !meter.capped);
  }
}

function panelResult(panel: PanelState): PanelResult {
  const { input } = panel;
  return {
    seats: panel.seats.map((s) => ({
      role: s.assignment.role,
      designed: s.assignment.designed,
      latest: s.latest,
      failures: s.failures,
      ...(s.notAsked && { notAsked: true }),
    })),
    passes: panel.passes,
    late: panel.late,
    rounds: panel.rounds,
    deliberation: panel.deliberation,
    judgment: panel.judgment,
    labels: panel.labels,
    judgedBy: panel.judgedBy,
    divergenceFirst: panel.divergenceFirst,
    best: null,
    answer: '',
    finish: 'stop',
    staff: { judge: panel.judgeCall, synthesis: null, grounding: panel.grounding.staff },
    staffUnavailable: panel.staffUnavailable,
    notes: input.seating.notes,
    judgeSeed: input.judgeSeed,
  };
}

/**
 * Step 8: the best seat's latest answer (every seat still answering has one), which synthesis replaces unless the
 * seats agree and the mode skips it, or Form A's ceiling is reached.
 */
async function synthesisStep(panel: PanelState, result: PanelResult): Promise<PanelResult> {
  const { input, answered, judgment, labels } = panel;
  const best = (judgment && answered.find((s) => labels[s.assignment.role] === judgment.best)) || answered[0];
  const bestPass = best.latest as SeatPass;
  result.best = bestPass.role;
  result.answer = bestPass.content;
  result.finish = bestPass.finish;
  // A caller's structure is written by the synthesis: it is not skipped for agreeing seats, whose answers are prose.
  const skippable = input.config.skipSynthesisWhenConverged && !input.answer?.format;
  if (!judgment || (judgment.converged && skippable) || input.meter.capped) return result;

  const labelled = answered
    .map((s) => ({ label: labels[s.assignment.role] ?? '?', text: s.latest?.content ?? '' }))
    .sort((a, b) => a.label.localeCompare(b.label));
  const prompt = withFormatInstruction(synthesisPrompt(input.messages, labelled, judgment.best, judgment.why), input.answer?.format);
  const { reply: r, stream } = await synthesisCall(panel, prompt, readingAll(panel, answered), true);
  if (r) {
    // The first synthesis call that answers is the only one: its latency is the receipt's.
    result.staff.synthesis = staffCall(r, input.seating.synthesis.designed, r.latencyMs);
    result.answer = r.text;
    result.finish = r.finish;
    return result;
  }
  // A synthesis that failed for good after its answer began streaming: what it wrote stands, not the best seat's.
  const written = await streamedSince(stream);
  if (written !== undefined) {
    result.answer = written;
    result.finish = 'length';
  }
  return result;
}

/**
 * The synthesis engine's call (its chain, each engine within the meter), in the caller's structure when asked one;
 * `writesAnswer`: its text is the answer as written (not a pinned rewrite kept only if it passes), so it may stream.
 */
async function synthesisCall(
  panel: PanelState,
  prompt: ChatMessage[],
  tokensIn: number,
  writesAnswer: boolean,
): Promise<{ reply: EngineCallResult | undefined; stream: AnswerStream | undefined }> {
  const { input } = panel;
  const { synthesize } = input.localCalls ? localEngineCalls : engineCalls;
  input.onStep?.({ stage: 'synthesising' });
  input.onEvent?.({ type: 'synthesising' });
  const format = input.answer?.format;
  const maxOut = withinCaller(input.config.seatMaxOutputTokens * 2, input.answer);
  const stream = writesAnswer ? input.answerStream?.() : undefined;
  const reply = await staffCallCharged(
    panel,
    { role: 'synthesis', chain: input.seating.synthesis.chain, tokensIn, maxOut },
    (engine, attempt) =>
      synthesize({
        orgId: input.orgId,
        engineId: engine.engineId,
        ownKey: false,
        messages: prompt,
        maxOutputTokens: maxOut,
        attempt,
        lane: input.lane,
        ...callerSampling(input.answer?.sampling),
        ...(format && { reply: replySchemaOf(format) }),
        ...(stream && { stream }),
      }),
  );
  return { reply, stream };
}

/**
 * A staff call down its engine chain: each engine only when the meter affords it, hedged, charged when it answers; an
 * engine that fails for good is named on the receipt under the staff role.
 */
function staffCallCharged(
  panel: PanelState,
  staff: { role: string; chain: SeatAssignment['chain']; tokensIn: number; maxOut: number },
  call: (engine: SeatAssignment['chain'][number], attempt: number | undefined) => Promise<EngineCallResult>,
): Promise<EngineCallResult | undefined> {
  const { input } = panel;
  return firstAnswering(
    staff.chain,
    async (engine) => {
      const reply = await hedged((attempt) => call(engine, attempt || undefined), input.hedgeAfterMs);
      input.meter.charge(reply);
      return { answer: reply };
    },
    {
      affords: (engine) => input.meter.affords([{ engine, tokensIn: staff.tokensIn, maxOut: staff.maxOut }]),
      failed: (reason) => {
        panel.staffUnavailable.push({ role: staff.role, reason });
      },
    },
  );
}

/** How the vote or the judge chose the seat whose text is the answer. */
interface Choice {
  speaker: SeatState;
  /** The answer chosen, as a key; undefined when no answer was read (a seat selected by the judge). */
  answer: string | undefined;
  decidedBy: DecidedBy;
  ballots: SeatBallot<SeatRole>[];
  ballotCall: AggregationRecord['ballotCall'];
}

/**
 * Step 8 for a mode that counts (issue 52): a vote over the answers read (a ballot call when none is readable, the
 * judge among tied seats only), or the judge's choice of one seat; that seat's text is the answer, as it was written.
 * A pinned synthesis may then rewrite it, kept only when it states the chosen answer uncut.
 */
async function aggregationStep(panel: PanelState, result: PanelResult, aggregation: Aggregation): Promise<PanelResult> {
  const { input } = panel;
  const choice = aggregation.method === 'vote' ? await vote(panel, aggregation) : await selection(panel, ballotsOf(panel, panel.answered));
  const pass = choice.speaker.latest as SeatPass;
  const readByBallot = choice.ballots.find((b) => b.role === pass.role)?.readBy === 'ballot';
  result.best = pass.role;
  result.answer = readByBallot && choice.answer !== undefined ? withAnswerLine(pass.content, choice.answer) : pass.content;
  result.finish = pass.finish;
  result.judgedBy = panel.judgedBy;
  result.staff.judge = panel.judgeCall;
  // A caller's structure is written by a synthesis: prose alone cannot meet it.
  let synthesis: SynthesisFate = 'none';
  if ((aggregation.prose === 'pinned' || input.answer?.format) && !input.meter.capped) {
    const prompt = withFormatInstruction(pinnedSynthesisPrompt(input.messages, pass.content, choice.answer), input.answer?.format);
    const { reply: r } = await synthesisCall(panel, prompt, readingAll(panel, [choice.speaker]), false);
    synthesis = 'failed';
    if (r) {
      result.staff.synthesis = staffCall(r, input.seating.synthesis.designed, r.latencyMs);
      // A caller's structure is JSON, not read for an answer: only a cut one is refused.
      synthesis = input.answer?.format
        ? r.finish === 'length'
          ? 'cut'
          : 'kept'
        : guardSynthesis(r.text, r.finish, choice.answer, input.answerKind);
      if (synthesis === 'kept') {
        result.answer = r.text;
        result.finish = r.finish;
      }
    }
  }
  const counted = tally(choice.ballots);
  result.aggregation = {
    method: aggregation.method,
    answerKind: input.answerKind?.kind ?? null,
    ballots: choice.ballots.map(({ role, answer, readBy }) => ({ role, answer, readBy })),
    votes: counted.map(({ answer, votes }) => ({ answer, votes })),
    winner: { role: pass.role, answer: choice.answer ?? null },
    decidedBy: choice.decidedBy,
    seatsAsked: panel.seatsAsked,
    earlyStop: panel.earlyStop,
    ballotCall: choice.ballotCall,
    synthesis,
    answerLineAdded: readByBallot && choice.answer !== undefined && synthesis !== 'kept',
  };
  input.onEvent?.({
    type: 'aggregated',
    method: aggregation.method,
    decidedBy: choice.decidedBy,
    earlyStop: panel.earlyStop,
    votes: counted.find((t) => t.answer === choice.answer)?.votes ?? 0,
    seats: panel.answered.length,
  });
  return result;
}

/** A vote: plurality over the answers read, unreadable seats abstaining. */
async function vote(panel: PanelState, aggregation: Aggregation): Promise<Choice> {
  const { input, answered } = panel;
  let ballots = ballotsOf(panel, answered);
  let ballotCall: Choice['ballotCall'] = null;
  let counted = plurality(ballots);
  if (counted.kind === 'none' && aggregation.ballot && input.answerKind && !input.meter.capped) {
    const read = await ballotRound(panel, input.answerKind);
    if (read) {
      ballotCall = read.call;
      ballots = ballots.map((b) => {
        const answer = read.answers[b.role] ?? null;
        return { ...b, answer, readBy: answer === null ? null : 'ballot' };
      });
      counted = plurality(ballots);
    }
  }
  const seatOf = (role: SeatRole): SeatState => answered.find((s) => s.assignment.role === role) as SeatState;
  if (counted.kind === 'none') return { ...(await selection(panel, ballots)), ballotCall };
  if (counted.kind === 'winner') {
    const decidedBy: DecidedBy = ballotCall
      ? 'ballot'
      : counted.top.votes === answered.length && answered.length > 1
        ? 'unanimous'
        : 'plurality';
    return { speaker: seatOf(speakerOf(counted.top, ballots)), answer: counted.top.answer, decidedBy, ballots, ballotCall };
  }
  // A tie: broken among the tied answers' seats only.
  const tied = counted.tied.map((t) => seatOf(speakerOf(t, ballots)));
  if (aggregation.tieBreak === 'first') {
    const first = panel.seats.find((s) => tied.includes(s)) as SeatState;
    return { speaker: first, answer: readAnswerOf(ballots, first), decidedBy: 'tie_first', ballots, ballotCall };
  }
  const { verdict, judgment, labels } = await judgeSeats(panel, tied, !input.meter.capped);
  const chosen = tied.find((s) => labels[s.assignment.role] === judgment.best) ?? tied[0];
  if (verdict) panel.judgedBy = 'llm';
  return { speaker: chosen, answer: readAnswerOf(ballots, chosen), decidedBy: 'tie_judge', ballots, ballotCall };
}

function readAnswerOf(ballots: readonly SeatBallot<SeatRole>[], s: SeatState): string | undefined {
  return ballots.find((b) => b.role === s.assignment.role)?.answer ?? undefined;
}

/** The judge names one seat (USC): the last round's judgment when one was read, else a judge call over the seats now. */
async function selection(panel: PanelState, ballots: SeatBallot<SeatRole>[]): Promise<Choice> {
  const { answered } = panel;
  let { judgment, labels } = panel;
  if (panel.aggregation?.method === 'vote' || !judgment) {
    const judged = await judgeSeats(panel, answered, !panel.input.meter.capped);
    ({ judgment, labels } = judged);
    panel.judgedBy = judged.verdict ? 'llm' : 'heuristic';
  }
  const chosen = (judgment && answered.find((s) => labels[s.assignment.role] === judgment.best)) || answered[0];
  return { speaker: chosen, answer: readAnswerOf(ballots, chosen), decidedBy: 'judge_select', ballots, ballotCall: null };
}

/** One short structured call reading every seat's answer out of its text; undefined when no engine gives one. */
async function ballotRound(
  panel: PanelState,
  kind: AnswerKind,
): Promise<{ answers: Partial<Record<SeatRole, string | null>>; call: NonNullable<Choice['ballotCall']> } | undefined> {
  const { input, answered } = panel;
  const { ballot } = input.localCalls ? localEngineCalls : engineCalls;
  const labelled = answered.map((s, i) => ({ role: s.assignment.role, label: LABELS[i], text: s.latest?.content ?? '' }));
  const prompt = ballotPrompt(input.messages, labelled, kind);
  const labels = labelled.map((l) => l.label);
  const tokensIn = readingAll(panel, answered);
  const r = await staffCallCharged(
    panel,
    { role: 'ballot', chain: input.seating.judge.chain, tokensIn, maxOut: BALLOT_MAX_OUTPUT },
    (engine, attempt) =>
      ballot({
        orgId: input.orgId,
        engineId: engine.engineId,
        ownKey: false,
        messages: prompt,
        maxOutputTokens: BALLOT_MAX_OUTPUT,
        attempt,
        lane: input.lane,
        reply: ballotSchema(labels, kind),
      }),
  );
  if (!r) return undefined;
  const read = readBallot(r.text, labels, kind);
  return {
    answers: Object.fromEntries(labelled.map((l) => [l.role, read[l.label]])),
    call: { modelUsed: r.engineId, latencyMs: r.latencyMs, tokensIn: r.tokensIn, tokensOut: r.tokensOut, realCostMicros: r.costMicros },
  };
}
