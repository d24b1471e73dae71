import { QuorumError, type ErrorCode } from '../../domain/errors';
import { BENCHMARK_SET_NAMES, isBenchmarkSetName } from '../../domain/questions/benchmark-sets';
import type { Form } from '../../domain/form';
import type { Tier } from '../../domain/modes';
import { BUCKETS, type Bucket } from '../../domain/questions/types';
import { JUDGE_SLOTS, JUDGING_PROTOCOLS, type JudgeSlot, type JudgingProtocol } from '../../domain/run-judging';
import { emptyCounts, RUN_LIMITS, totalQuestions, type BucketCounts } from '../../domain/runs';
import { isStorableText } from '../../domain/storable-text';

/**
 * The run requests of spec 02 (`POST /v1/tests`, `POST /v1/certify`) in each Form. Each rule answers with the code
 * the spec's table gives it, so these are read field by field rather than through one schema.
 */
export interface RunRequest {
  model: string;
  counts: BucketCounts;
  judges: JudgeSlot[];
  repeats: number;
  protocol: JudgingProtocol;
  dryRun: boolean;
  tiers: Tier[];
  punchUp: boolean;
  questionSetId: string | null;
  /** A paired re-run: the questions (counts, set and seed) of this earlier run of the organisation. */
  sameQuestionsAs?: string;
  /** Where the run's signed `run.ended` event is POSTed when it ends (issue 28 item 6); absent: nowhere. */
  callbackUrl?: string;
  /** `svc.baselines: false`: no equal-cost arms (issue 39 item 2); absent: the run runs them. */
  equalCostArms?: false;
}

/** Form B names the buckets by difficulty; `light` is `easy` there. */
export const FORM_B_DIFFICULTIES: Readonly<Record<string, Bucket>> = { easy: 'light', medium: 'medium', hard: 'hard' };
/** Form B tiers; `free` is the `experience` tier, which Form B also accepts by that name. */
const FORM_B_TIERS: Readonly<Record<string, Tier>> = { free: 'experience', experience: 'experience', plus: 'plus', pro: 'pro' };
/** Form B's range for one difficulty's count (a run still holds at most 300 questions). */
const FORM_B_COUNT_MAX = RUN_LIMITS.maxQuestions;

const fail = (code: ErrorCode, message: string, param: string): never => {
  throw new QuorumError(code, message, { param });
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

function model(body: Record<string, unknown>): string {
  const m = body.model;
  // Spec 01's table: `invalid_model` when `model` is missing, for tests and certify in both Forms.
  if (m === undefined) return fail('invalid_model', '`model` is required.', 'model');
  if (typeof m !== 'string' || m.length === 0 || m.length > 200 || !isStorableText(m))
    return fail('invalid_model', '`model` must be a mode id (Form A) or a ticker (Form B).', 'model');
  return m;
}

/** Counts keyed by `names` (each mapped to a bucket): one code for a bad key, one for a bad count. */
function counts(
  raw: unknown,
  field: string,
  names: Readonly<Record<string, Bucket>>,
  codes: { shape: ErrorCode; key: ErrorCode; count: ErrorCode },
  range: { min: number; max: number },
): BucketCounts {
  if (!isObject(raw) || Object.keys(raw).length === 0)
    return fail(codes.shape, `\`${field}\` must be an object of question counts keyed by ${Object.keys(names).join(', ')}.`, field);
  const out = emptyCounts();
  for (const [key, value] of Object.entries(raw)) {
    const bucket = names[key];
    if (!bucket) return fail(codes.key, `\`${field}.${key}\` is not one of ${Object.keys(names).join(', ')}.`, `${field}.${key}`);
    if (!isWhole(value) || value < range.min || value > range.max)
      return fail(codes.count, `\`${field}.${key}\` must be a whole number from ${range.min} to ${range.max}.`, `${field}.${key}`);
    out[bucket] = value;
  }
  const total = totalQuestions(out);
  if (total === 0) return fail(codes.count, `\`${field}\` asks for no questions; ask for at least one.`, field);
  if (total > RUN_LIMITS.maxQuestions)
    return fail('too_many_questions', `A run holds at most ${RUN_LIMITS.maxQuestions} questions; this asks for ${total}.`, field);
  return out;
}

const LIGHT_MEDIUM_HARD: Readonly<Record<string, Bucket>> = Object.fromEntries(BUCKETS.map((b) => [b, b]));

function questionCounts(body: Record<string, unknown>, form: Form): BucketCounts {
  if (form === 'A')
    return counts(
      body.buckets,
      'buckets',
      LIGHT_MEDIUM_HARD,
      { shape: 'invalid_buckets', key: 'invalid_buckets', count: 'invalid_bucket_count' },
      { min: RUN_LIMITS.bucketMin, max: RUN_LIMITS.bucketMax },
    );
  const range = { min: 0, max: FORM_B_COUNT_MAX };
  if (body.questions === undefined && body.buckets !== undefined)
    return counts(
      body.buckets,
      'buckets',
      LIGHT_MEDIUM_HARD,
      { shape: 'invalid_questions', key: 'invalid_bucket', count: 'invalid_question_count' },
      range,
    );
  return counts(
    body.questions,
    'questions',
    FORM_B_DIFFICULTIES,
    { shape: 'invalid_questions', key: 'invalid_difficulty', count: 'invalid_question_count' },
    range,
  );
}

function judges(raw: unknown, form: Form): JudgeSlot[] {
  if (raw === undefined) return [...JUDGE_SLOTS];
  const ok =
    Array.isArray(raw) &&
    raw.length > 0 &&
    raw.every((j) => (JUDGE_SLOTS as readonly unknown[]).includes(j)) &&
    new Set(raw).size === raw.length;
  if (!ok)
    fail(
      form === 'A' ? 'invalid_judges' : 'invalid_request',
      '`judges` must be a non-empty list of distinct judge_a, judge_b, judge_c.',
      'judges',
    );
  return raw as JudgeSlot[];
}

function tiers(raw: unknown): Tier[] {
  if (raw === undefined) return ['plus'];
  const ok = Array.isArray(raw) && raw.length > 0 && raw.every((t) => typeof t === 'string' && Object.hasOwn(FORM_B_TIERS, t));
  if (!ok) fail('invalid_tiers', '`tiers` must be a non-empty list from free, plus, pro.', 'tiers');
  return [...new Set((raw as string[]).map((t) => FORM_B_TIERS[t]))];
}

function boolean(raw: unknown, field: string, code: ErrorCode): boolean {
  if (raw === undefined) return false;
  if (typeof raw !== 'boolean') fail(code, `\`${field}\` must be true or false.`, field);
  return raw as boolean;
}

function svcOf(body: Record<string, unknown>): Record<string, unknown> {
  const svc = body.svc;
  if (svc === undefined || svc === null) return {};
  if (!isObject(svc)) return fail('invalid_request', '`svc` must be an object.', 'svc');
  return svc;
}

function questionSet(body: Record<string, unknown>): string | null {
  const id = svcOf(body).question_set;
  if (id === undefined || id === null) return null;
  if (typeof id !== 'string' || !(/^qs_[A-Za-z0-9]{1,64}$/.test(id) || isBenchmarkSetName(id)))
    return fail(
      'invalid_request',
      `\`svc.question_set\` must be an imported question set id (\`qs_…\`) or a benchmark set: ${BENCHMARK_SET_NAMES.join(', ')}.`,
      'svc.question_set',
    );
  return id;
}

/**
 * `svc.same_questions_as` (both Forms): the earlier run's questions, so its counts and set come from that run and
 * the request's own question options would contradict it.
 */
function sameQuestionsAs(body: Record<string, unknown>, form: Form): string | undefined {
  const id = svcOf(body).same_questions_as;
  if (id === undefined || id === null) return undefined;
  if (typeof id !== 'string' || id.length === 0 || id.length > 64)
    return fail('invalid_request', '`svc.same_questions_as` must be the `batch_id` of an earlier run.', 'svc.same_questions_as');
  const own = form === 'A' ? ['buckets'] : ['questions', 'buckets'];
  const clash = [...own.filter((f) => body[f] !== undefined), ...(questionSet(body) === null ? [] : ['svc.question_set'])];
  if (clash.length > 0)
    fail(
      'invalid_request',
      `\`svc.same_questions_as\` runs that run's questions, so it cannot be combined with \`${clash[0]}\`; send one or the other.`,
      clash[0],
    );
  return id;
}

/** `svc.callback_url` (both Forms): an http(s) URL; where it may point is checked at launch (operations/run-launch.ts). */
function callbackUrl(body: Record<string, unknown>): { callbackUrl?: string } {
  const raw = svcOf(body).callback_url;
  if (raw === undefined || raw === null) return {};
  const url = typeof raw === 'string' && raw.length <= 2048 ? URL.parse(raw) : null;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '')
    return fail(
      'invalid_request',
      '`svc.callback_url` must be an http or https URL without credentials, at most 2048 characters.',
      'svc.callback_url',
    );
  // Absent rather than undefined: the launch's fingerprint (and so its derived key) stays as it was without one.
  return { callbackUrl: url.href };
}

/**
 * `svc.baselines` (both Forms): true (the default) runs the equal-cost arms beside the spec's baseline, false does
 * not. Absent rather than true in the request, so a launch's fingerprint (and derived key) is as it was without it.
 */
function equalCostArms(body: Record<string, unknown>): { equalCostArms?: false } {
  const raw = svcOf(body).baselines;
  if (raw === undefined || raw === null || raw === true) return {};
  if (raw === false) return { equalCostArms: false };
  return fail('invalid_request', '`svc.baselines` must be true or false.', 'svc.baselines');
}

export function parseTestRunRequest(form: Form, body: Record<string, unknown>): RunRequest {
  const m = model(body);
  const paired = sameQuestionsAs(body, form);
  // A paired run's counts are the earlier run's (operations/run-launch.ts reads them).
  const c = paired === undefined ? questionCounts(body, form) : emptyCounts();
  const j = judges(body.judges, form);
  const repeats = body.judge_repeats ?? 1;
  if (!isWhole(repeats) || repeats < RUN_LIMITS.repeatsMin || repeats > RUN_LIMITS.repeatsMax)
    fail('invalid_request', '`judge_repeats` must be a whole number from 1 to 3.', 'judge_repeats');
  const protocol = body.judging_protocol ?? 'pairwise';
  if (!(JUDGING_PROTOCOLS as readonly unknown[]).includes(protocol))
    fail('invalid_request', '`judging_protocol` must be `pairwise` or `plurality`.', 'judging_protocol');
  return {
    model: m,
    counts: c,
    judges: j,
    repeats: repeats as number,
    protocol: protocol as JudgingProtocol,
    dryRun: boolean(body.dry_run, 'dry_run', 'invalid_request'),
    // Tiers and punch-up are Form B fields; Form A runs the mode's `plus` panel against its own strongest seat.
    tiers: form === 'B' ? tiers(body.tiers) : ['plus'],
    punchUp: form === 'B' ? boolean(body.punch_up, 'punch_up', 'invalid_punch_up') : false,
    questionSetId: questionSet(body),
    ...(paired === undefined ? {} : { sameQuestionsAs: paired }),
    ...callbackUrl(body),
    ...equalCostArms(body),
  };
}

export function parseCertifyRequest(body: Record<string, unknown>): { model: string; dryRun: boolean; callbackUrl?: string } {
  // A certification's questions are drawn fresh at launch, so they cannot have been seen, or tuned to, before.
  if (isObject(body.svc) && body.svc.same_questions_as !== undefined)
    fail(
      'invalid_request',
      'A certification draws fresh questions; `svc.same_questions_as` is for test runs (`POST /v1/tests`).',
      'svc.same_questions_as',
    );
  // Its evidence is what buyers read: the certification always runs the equal-cost arms (issue 39 item 2).
  if (equalCostArms(body).equalCostArms === false)
    fail(
      'invalid_request',
      'A certification always runs its equal-cost baselines; `svc.baselines: false` is for test runs (`POST /v1/tests`).',
      'svc.baselines',
    );
  return { model: model(body), dryRun: boolean(body.dry_run, 'dry_run', 'invalid_request'), ...callbackUrl(body) };
}

/** `batch_id` of a poll: required; anything else is simply a batch that does not exist. */
export function parseBatchId(raw: unknown): string {
  if (raw === undefined || raw === '')
    throw new QuorumError('missing_batch_id', 'Send the run to poll as `?batch_id=`.', { param: 'batch_id' });
  if (typeof raw !== 'string') throw new QuorumError('invalid_request', 'Send `batch_id` once.', { param: 'batch_id' });
  return raw;
}
