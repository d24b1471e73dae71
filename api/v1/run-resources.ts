import { z } from 'zod';
import { BENCHMARK_SET_NAMES } from '../../domain/questions/benchmark-sets';
import { JUDGE_SLOTS, JUDGING_PROTOCOLS } from '../../domain/run-judging';
import { BATCH_STATES, RUN_KINDS, RUN_LIMITS } from '../../domain/runs';
import { QUESTION_PAGE } from '../../operations/run-questions';

/**
 * The run resources of spec 02 as JSON Schema for the OpenAPI document: the request bodies (which the parsers in
 * runs.ts read field by field, to answer each rule with its own code) and the `batch` and `certification` objects.
 * The tests parse real responses with these, so the document cannot drift from what is served.
 */
const count = (min: number, max: number) => z.number().int().min(min).max(max);
const CallbackUrl = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .optional()
  .describe(
    'Where the run POSTs its signed `run.ended` event when it ends (`Quorum-Signature`, docs/api-extensions.md). In production an address inside the deployment (loopback, private, link-local, metadata) is 400 `callback_url_refused`.',
  );

export function testRunRequestSchema(form: 'A' | 'B'): z.ZodType {
  const common = {
    model: z
      .string()
      .min(1)
      .describe(form === 'A' ? 'A mode id the caller owns.' : 'A ticker the caller owns (`:LAB` allowed).'),
    judges: z
      .array(z.enum(JUDGE_SLOTS))
      .min(1)
      .optional()
      .describe('Default: all three. Judging is blind, anonymised and order-randomised.'),
    judge_repeats: count(RUN_LIMITS.repeatsMin, RUN_LIMITS.repeatsMax)
      .optional()
      .describe('Default 1; the order is mirrored between repeats.'),
    judging_protocol: z
      .enum(JUDGING_PROTOCOLS)
      .optional()
      .describe('Default `pairwise` (mode vs baseline); `plurality` adds each seat engine alone.'),
    dry_run: z.boolean().optional().describe('Price and duration only; nothing starts or is charged.'),
    svc: z
      .object({
        question_set: z
          .string()
          .optional()
          .describe(
            `An imported question set (\`qs_…\`, \`quorum questions import\`) or a real benchmark set where installed: ${BENCHMARK_SET_NAMES.join(', ')} (docs/runs.md).`,
          ),
        same_questions_as: z
          .uuid()
          .optional()
          .describe(
            `A paired re-run: exactly the questions of this earlier run of the organisation (404 otherwise), on the mode as it is now; the poll reports \`svc.paired\`. Not with \`${form === 'A' ? 'buckets' : 'questions'}\` or \`svc.question_set\` (400).`,
          ),
        callback_url: CallbackUrl,
        baselines: z
          .boolean()
          .optional()
          .describe(
            'Default true: the equal-cost arms run beside the baseline (the baseline engine sampled k times at the mode’s seat cost, aggregated by Self-MoA and by majority vote; docs/runs.md), priced into the run. False: the spec’s baseline alone.',
          ),
      })
      .optional(),
  };
  const buckets = z
    .object({
      light: count(RUN_LIMITS.bucketMin, RUN_LIMITS.bucketMax).optional(),
      medium: count(RUN_LIMITS.bucketMin, RUN_LIMITS.bucketMax).optional(),
      hard: count(RUN_LIMITS.bucketMin, RUN_LIMITS.bucketMax).optional(),
    })
    .strict();
  if (form === 'A') return z.object({ ...common, buckets });
  const difficulty = count(0, RUN_LIMITS.maxQuestions).optional();
  return z.object({
    ...common,
    questions: z
      .object({ easy: difficulty, medium: difficulty, hard: difficulty })
      .strict()
      .optional()
      .describe(`At most ${RUN_LIMITS.maxQuestions} in total.`),
    buckets: z
      .object({ light: difficulty, medium: difficulty, hard: difficulty })
      .strict()
      .optional()
      .describe('The legacy form of `questions`.'),
    tiers: z
      .array(z.enum(['free', 'experience', 'plus', 'pro']))
      .min(1)
      .optional()
      .describe('Tiers the questions are dealt to in turn; default `plus`.'),
    punch_up: z.boolean().optional().describe("The baseline is the next tier's strongest engine instead of the mode's own strongest seat."),
  });
}

export const CertifyRequestSchema = z.object({
  model: z.string().min(1),
  dry_run: z.boolean().optional(),
  svc: z
    .object({
      callback_url: CallbackUrl,
      baselines: z.literal(true).optional().describe('A certification always runs its equal-cost arms; false is 400.'),
    })
    .optional(),
});

const interval = z.object({ low: z.number(), high: z.number() });
const perBucket = z.record(z.string(), z.number().int());
const accuracy = z.object({ rate: z.number(), correct: z.number().int(), n: z.number().int(), interval });
const group = z.object({
  questions: z.number().int(),
  judgments: z.number().int(),
  win_rate: z.number().nullable(),
  interval: interval.nullable(),
  standard_error: z.number().nullable(),
  mode_accuracy: accuracy,
  baseline_accuracy: accuracy,
});

/** A run's question as `include=questions` lists it and `format=jsonl` streams it (issue 28 item 3). */
/** The equal-cost arms (issue 39 item 2): how k was chosen per tier, each arm's figures, a question's arm answers. */
const SamplePlanSchema = z.object({
  tier: z.string(),
  engine: z.string().describe('The baseline’s engine, sampled k times.'),
  samples: z
    .number()
    .int()
    .describe(
      'k = ⌊mode_cost_usd ÷ sample_cost_usd⌋, at least 2 and at most 12: the mode’s whole cost per question (seats, judge, ballot, synthesis). A plan launched before issue 52 (`mode_cost_usd` null) chose it at the seats’ cost.',
    ),
  samples_seats_only: z
    .number()
    .int()
    .nullable()
    .describe('k at the seats’ cost alone, ⌊mode_seats_cost_usd ÷ sample_cost_usd⌋ within the same bounds.'),
  basis: z
    .enum(['recorded', 'projected'])
    .describe('`recorded`: means over the mode version’s earlier questions (20 or more); `projected`: the quote’s arithmetic.'),
  recorded_questions: z.number().int(),
  mode_cost_usd: z
    .number()
    .nullable()
    .describe('What the mode costs per question, every engine call; null on plans launched before issue 52.'),
  mode_seats_cost_usd: z.number(),
  sample_cost_usd: z.number(),
});
const ArmAnswerSchema = z.object({
  answer: z.string().nullable().describe('With `include_transcript=true` once the run has ended.'),
  answer_chars: z.number().int(),
  extracted_answer: z
    .string()
    .nullable()
    .describe('The answer as the majority vote reads it; null when unreadable, while the run is sealed, and on rows before issue 52.'),
  correct: z.boolean().describe('The question’s checker on the answer, against the gold answer.'),
  cost_usd: z.number(),
  latency_ms: z.number().int(),
});
const QuestionArmsSchema = z.object({
  samples: z.number().int(),
  samples_answered: z.number().int(),
  self_moa: ArmAnswerSchema.nullable(),
  majority_vote: ArmAnswerSchema.extend({ votes: z.number().int() }).nullable(),
  sample_answers: z
    .array(z.object({ answer: z.string().nullable(), correct: z.boolean() }).nullable())
    .nullable()
    .describe(
      'Each sample in order (the first is the baseline’s): the answer its majority vote counted (null when unreadable, and while the run is sealed) and the checker on it; null for a sample that failed. Null on rows before issue 52.',
    ),
});
const pairedDifference = z.object({
  pairs: z.number().int(),
  difference: z.number(),
  ci_low: z.number().nullable(),
  ci_high: z.number().nullable(),
  confidence: z.number(),
  degrees_of_freedom: z.number().int(),
  no_interval_reason: z.string().nullable(),
});
/** Issue 52 item 1: each seat's own answer and the seats' vote, beside the answer the mode returned. */
const QuestionSeatsSchema = z.object({
  answer_kind: z.string().describe('How the seats’ texts were read: `choice`, `yes_no`, `number`, `short_text`, `math`.'),
  round: z.number().int().describe('The panel’s final round: the passes read.'),
  seats: z.array(
    z.object({
      role: z.string(),
      engine: z.string().nullable().describe('Null when the seat gave no answer in the final round.'),
      answer: z.string().nullable().describe('The answer its text gives, as read; null when unreadable, and while the run is sealed.'),
      correct: z.boolean(),
      not_asked: z.boolean().describe('A first wave agreed and the seat was never asked.'),
    }),
  ),
  vote: z.object({
    answer: z.string().nullable(),
    votes: z.number().int(),
    seat: z.string().nullable().describe('The seat whose text stands for the vote.'),
    correct: z.boolean(),
    decided_by: z
      .enum(['plurality', 'tie_first', 'none_readable', 'no_answer'])
      .describe('`tie_first`: a tie, the first tied seat’s answer stands; `none_readable`: no seat’s answer could be read.'),
  }),
  mode_answer: z.string().nullable().describe('The answer the mode returned, read the same way.'),
});
const seatsVoteAccuracy = z.object({
  correct: z.number().int(),
  accuracy: z.number(),
  accuracy_ci_low: z.number(),
  accuracy_ci_high: z.number().describe('Wilson 95% over the questions.'),
});
const SeatsVoteSummarySchema = z.object({
  questions: z.number().int(),
  mode: seatsVoteAccuracy.describe('The answer the mode returned.'),
  seats_vote: seatsVoteAccuracy.describe('The seats’ plurality over their own final answers.'),
  mode_minus_vote: pairedDifference.describe('Paired by question, 95% interval clustered by the questions’ clusters.'),
  lost: z.number().int().describe('Questions the vote got right and the returned answer wrong: what the final step threw away.'),
  gained: z.number().int().describe('Questions the vote got wrong and the returned answer right.'),
  ties: z.number().int(),
  unreadable: z.number().int(),
});
const ArmSummarySchema = z.object({
  arm: z.enum(['mode', 'baseline', 'self_moa', 'majority_vote']),
  questions: z.number().int(),
  accuracy: z.number(),
  accuracy_ci_low: z.number(),
  accuracy_ci_high: z.number().describe('Wilson 95% over the questions.'),
  cost_per_question_usd: z.number(),
  latency_ms_median: z.number().int(),
  mode_minus_arm: pairedDifference
    .nullable()
    .describe(
      'The mode’s accuracy minus the arm’s, paired by question, 95% interval clustered by the questions’ clusters; null for the mode.',
    ),
});

export const RunQuestionSchema = z.object({
  id: z.string(),
  bucket: z.string().describe('`light`, `medium`, `hard` (Form A); `easy`, `medium`, `hard` (Form B).'),
  tier: z.string(),
  cluster: z.string().describe('The template the question came from: the statistics cluster by it.'),
  sealed: z
    .boolean()
    .describe(
      "The run has not ended: `source`, `question`, `reference_answer` and the answers' texts are null until it has (issue 38 item 1).",
    ),
  source: z
    .object({ set: z.string(), id: z.string() })
    .nullable()
    .describe(
      "A benchmark set's question: the set (`gsm8k`, `arc-easy`…) and the item's id in its published source; null for generated and imported questions, and while the run is sealed.",
    ),
  question: z
    .string()
    .nullable()
    .describe('The prompt as asked; null while the run is sealed, or for an older run whose question can no longer be derived.'),
  reference_answer: z.string().nullable().describe('Null while the run is sealed.'),
  mode_answer: z
    .string()
    .nullable()
    .describe('With `include_transcript=true` once the run has ended (stored up to 4,000 characters); else null.'),
  mode_answer_chars: z.number().int(),
  mode_correct: z.boolean().describe('The final answer matched `reference_answer` (exact-answer check when the question was recorded).'),
  baseline_engine: z.string(),
  baseline_answer: z.string().nullable().describe('With `include_transcript=true` once the run has ended; else null.'),
  baseline_answer_chars: z.number().int(),
  baseline_correct: z.boolean(),
  judgments: z
    .array(
      z.object({
        judge: z.enum(JUDGE_SLOTS),
        engine: z.string(),
        repeat: z.number().int(),
        order: z
          .array(z.number().int())
          .describe(
            'The answers as the judge saw them, first to last: 0 is the mode’s, 1 the baseline’s (`plurality`: 1… are the seat engines’ own first answers).',
          ),
        verdict: z
          .enum(['win', 'tie', 'loss'])
          .nullable()
          .describe('For the mode’s answer; null when the reply was not a readable verdict.'),
      }),
    )
    .describe('Judges × repeats.'),
  recusals: z.array(z.object({ slot: z.enum(JUDGE_SLOTS), engine: z.string(), replaced_by: z.string().nullable() })),
  cost_usd: z.number().describe('What the engines cost for this question (the run itself was billed up front).'),
  latency_ms: z.number().int().describe('From the question’s start to its last judge’s verdict.'),
  costs: z
    .object({
      mode_usd: z.number(),
      mode_seats_usd: z.number(),
      baseline_usd: z.number(),
      mode_latency_ms: z.number().int(),
      baseline_latency_ms: z.number().int(),
    })
    .nullable()
    .describe('The mode’s and the baseline’s own cost and time: the recorded figures the equal-cost arms’ k is chosen from.'),
  arms: QuestionArmsSchema.nullable().describe('The equal-cost arms’ answers; null on a run without them.'),
  seats: QuestionSeatsSchema.nullable().describe('Each seat’s answer and the seats’ own vote (issue 52); null on rows before it.'),
});

const QuestionPageSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(RunQuestionSchema),
    first_id: z.string().nullable(),
    last_id: z.string().nullable().describe('Pass as `after` for the next page.'),
    has_more: z.boolean(),
  })
  .optional()
  .describe('With `include=questions`: questions in the order they were recorded; a live run’s so far.');

/** The poll's per-question parameters (OpenAPI parameter objects). */
export const RUN_QUESTION_PARAMETERS = [
  { name: 'include', in: 'query', required: false, schema: { type: 'string', enum: ['questions'] } },
  { name: 'include_transcript', in: 'query', required: false, schema: { type: 'boolean', default: false } },
  {
    name: 'limit',
    in: 'query',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: QUESTION_PAGE.max, default: QUESTION_PAGE.default },
  },
  { name: 'after', in: 'query', required: false, schema: { type: 'string' }, description: 'The previous page’s `last_id`.' },
  {
    name: 'format',
    in: 'query',
    required: false,
    schema: { type: 'string', enum: ['json', 'jsonl'], default: 'json' },
    description: '`jsonl`: every recorded question, one `RunQuestion` a line (`application/x-ndjson`), not paged.',
  },
];

export const LaunchSchema = z.object({
  ok: z.boolean(),
  dry_run: z.boolean(),
  batch_id: z.uuid().nullable().describe('Null on a dry run.'),
  model: z.string(),
  mode_key: z.string(),
  total_questions: z.number().int(),
  per_bucket: perBucket,
  total_cost_usd: z.number().optional().describe('On a dry run.'),
  billed_usd: z.number().optional().describe('On a real run; charged up front.'),
  estimated_minutes: z.number().int(),
  status_url: z.string().nullable(),
  note: z.string(),
  requires_listing: z.boolean().optional().describe('Form B: a certification dry run on an unlisted mode.'),
  svc: z
    .object({
      quote_id: z.uuid().optional(),
      quote_expires_at: z.string().optional(),
      baselines: z
        .object({ arms: z.array(z.string()), samples: z.array(SamplePlanSchema), price_usd: z.number() })
        .nullable()
        .optional()
        .describe('The equal-cost arms the run runs and what they add to its price (inside a certification’s $50); null when off.'),
    })
    .optional()
    .describe(
      "A test run's dry run: the quote the first launch of the same body by the same key before `quote_expires_at` honours exactly (issue 38 item 8).",
    ),
});

const judgmentCount = z.object({ readable: z.number().int(), planned: z.number().int() });

/** What a certification certified (issue 38 item 5): the tier its questions ran at, and its question set. */
export const CertifiedScopeSchema = {
  tier: z.string().describe('The panel tier the certification ran its questions at (`plus`): the verdict is for that tier only.'),
  question_set: z.object({
    source: z.enum(['generated', 'imported']).describe('`generated`: drawn fresh for the run from its seed.'),
    id: z.string().nullable(),
    questions: z.number().int(),
    per_bucket: z.record(z.string(), z.number().int()),
  }),
};

/** Every attempt on the configuration, in launch order (issue 38 item 3). */
export const AttemptSchema = z.object({
  batch_id: z.uuid(),
  attempt: z.number().int().describe('From 1, in launch order, counting every attempt that started (running, ended, cancelled).'),
  state: z.enum([...BATCH_STATES, 'launching']),
  verdict: z.enum(['certified', 'provisional', 'not_certified']).nullable(),
  alpha: z.number().describe('α_k = 0.02·6/(π²k²): the one-sided level this attempt was held to.'),
  interval: interval.nullable().describe('The plain 95% interval of its win rate.'),
  adjusted_lower_bound: z.number().nullable().describe('Its one-sided lower bound at `alpha`.'),
  mode_version: z.number().int(),
  launched_at: z.string(),
  finished_at: z.string().nullable(),
});

export const BatchSchema = z.object({
  id: z.uuid(),
  kind: z.enum(RUN_KINDS),
  state: z.enum(BATCH_STATES).describe('queued → running → judging → completed; or failed, or cancelled.'),
  model: z.string(),
  mode_key: z.string(),
  mode_version: z.number().int(),
  simulated: z
    .boolean()
    .describe(
      'A test key’s run on `sim` engines: billed nothing, and never evidence (listing, the estimate’s deliberation_value, the advisor).',
    ),
  judging: z.object({
    protocol: z.enum(JUDGING_PROTOCOLS),
    judges: z.array(z.enum(JUDGE_SLOTS)),
    repeats: z.number().int(),
    punch_up: z.boolean(),
    tiers: z.array(z.string()),
    question_set: z.string().nullable(),
  }),
  progress: z.object({
    done: z.number().int(),
    total: z.number().int(),
    failed: z.number().int(),
    per_bucket: perBucket,
    per_bucket_total: perBucket,
  }),
  created_at: z.string(),
  started_at: z.string().nullable(),
  updated_at: z.string(),
  finished_at: z.string().nullable(),
  elapsed_seconds: z.number().int(),
  estimated_seconds_left: z.number().int(),
  billed_usd: z.number(),
  refunded_usd: z
    .number()
    .describe(
      'Credited back at the end: all of it without a verdict (a certification) or without any judged question (a test run), else the own prices of the questions no judge delivered a verdict on.',
    ),
  engine_cost_usd: z.number().nullable(),
  results: z
    .object({ per_bucket: z.record(z.string(), group), overall: group })
    .nullable()
    .describe('Once the run has ended; null when no judge verdict could be read (state `incomplete`).'),
  coverage: z
    .object({
      judged: z.number().int(),
      total: z.number().int(),
      per_bucket: z.record(z.string(), z.object({ judged: z.number().int(), total: z.number().int() })),
      required_overall: z.number(),
      required_per_bucket: z.number(),
      judgments: z
        .object({
          readable: z.number().int(),
          planned: z.number().int().describe('Questions × repeats for each judge slot.'),
          per_bucket: z.record(z.string(), judgmentCount),
          per_judge: z.record(z.string(), z.record(z.string(), judgmentCount)),
          required_overall: z.number(),
          required_per_judge_per_bucket: z.number(),
        })
        .nullable()
        .describe('Judges’ verdicts read against those planned; null on a run that ended before 2026-11-27.'),
      met: z.boolean(),
    })
    .nullable()
    .describe(
      'Questions with at least one readable judge verdict, and judgments read. A certification verdict, or a run used as evidence, needs `required_overall` of the questions and `required_per_bucket` in every bucket, and `judgments.required_overall` of the planned judgments and `judgments.required_per_judge_per_bucket` of each judge’s in every bucket; below it a certification ends `incomplete`, without a verdict.',
    ),
  recusals: z.array(
    z.object({ slot: z.enum(JUDGE_SLOTS), engine: z.string(), replaced_by: z.string().nullable(), questions: z.number().int() }),
  ),
  unread_verdicts: z.number().int(),
  baselines: z
    .object({ samples: z.array(SamplePlanSchema), arms: z.array(ArmSummarySchema).nullable().describe('Once the run has ended.') })
    .nullable()
    .describe('The equal-cost arms (docs/runs.md); null on a run launched with `svc.baselines: false` or before them.'),
  seats_vote: SeatsVoteSummarySchema.nullable().describe(
    'The answer the mode returned against its seats’ own vote, paired (docs/runs.md); null until the run has ended, and on runs before issue 52.',
  ),
  warnings: z.array(z.string()),
  error: z.object({ code: z.string(), message: z.string().nullable() }).nullable(),
});

export const CertificationSchema = z.object({
  verdict: z
    .enum(['certified', 'provisional', 'not_certified'])
    .describe(
      'Certified when the attempt-adjusted lower bound is above 0.50; otherwise provisional when the plain 95% lower bound L is above 0.40.',
    ),
  ...CertifiedScopeSchema,
  win_rate: z.number().nullable(),
  interval: interval.nullable().describe('Clustered by question (G/(G−1) correction), t with G−1 degrees of freedom.'),
  interval_note: z.string().nullable().describe('Why the interval is not the clustered one (no spread between questions).'),
  lower_bound: z.number().nullable(),
  confidence: z.number(),
  attempt: z
    .object({ number: z.number().int(), alpha: z.number(), adjusted_lower_bound: z.number() })
    .nullable()
    .describe('Which attempt on the mode configuration this was, its α and its bound at α; null before attempts were counted.'),
  standard_error: z.number().nullable(),
  degrees_of_freedom: z.number().int().nullable(),
  clusters: z.number().int(),
  judgments: z.number().int(),
  mode_accuracy: z.number(),
  baseline_accuracy: z.number(),
  judge_agreement: z.object({ fleiss_kappa: z.number().nullable() }),
  position_consistency: z.object({
    pairs: z.number().int(),
    flips: z.number().int(),
    flip_rate: z.number(),
    threshold: z.number(),
    flagged: z.boolean(),
  }),
  ladder: z.record(z.string(), z.string()),
});

/** A paired re-run's difference from the run it named (issue 28 item 4). */
export const PairedSchema = z.object({
  against: z.uuid().describe('The run named in `svc.same_questions_as`.'),
  pairs: z.number().int().describe('Questions with a readable verdict in both runs; the difference is over these.'),
  difference: z.number().nullable().describe('This run’s win rate minus the other’s on the paired questions; null below two pairs.'),
  ci_low: z.number().nullable(),
  ci_high: z
    .number()
    .nullable()
    .describe(
      '95% interval, clustered by question over both runs’ judgments (G/(G−1) correction, t with G−1 degrees of freedom); null with `no_interval_reason` when there is none.',
    ),
  confidence: z.number(),
  standard_error: z.number().nullable(),
  degrees_of_freedom: z.number().int(),
  no_interval_reason: z
    .string()
    .nullable()
    .describe(
      'Why there is no interval: fewer than two questions judged in both runs, or every question differed by the same amount (no spread to measure: a zero-width interval would claim the difference is known exactly).',
    ),
});
export const TestPollSchema = z.object({
  ok: z.boolean(),
  batch: BatchSchema,
  svc: z.object({ paired: PairedSchema }).optional().describe('Only on a run launched with `svc.same_questions_as`.'),
  questions: QuestionPageSchema,
});
export const CertifyPollSchema = z.object({
  ok: z.boolean(),
  batch: BatchSchema,
  certification: CertificationSchema.nullable(),
  attempts: z.array(AttemptSchema).describe('Every attempt on this mode configuration, this one included, in launch order.'),
  questions: QuestionPageSchema,
});

/**
 * The body of a completion callback (issue 28 item 6, domain/run-event.ts): POSTed to `svc.callback_url` with
 * `Quorum-Signature` and `Quorum-Event-Id` once the run ends; `/openapi.json` lists it under `webhooks`.
 */
export const RunEndedEventSchema = z.object({
  id: z.string().describe('`evt_…`, one per run: the same on every retry, so a receiver dedups by it.'),
  object: z.literal('event'),
  type: z.literal('run.ended'),
  created: z.number().int().describe('Unix seconds: when the run ended.'),
  batch_id: z.uuid(),
  kind: z.enum(['test', 'certify']),
  state: z.enum(['completed', 'incomplete', 'failed', 'cancelled']),
  model: z.string(),
  simulated: z.boolean().describe('A test key’s run on `sim` engines: its verdict certifies nothing (issue 38 item 4).'),
  summary: z.object({
    questions: z.number().int(),
    answered: z.number().int(),
    judged: z.number().int().describe('Questions with at least one judge’s verdict read.'),
    win_rate: z.number().nullable(),
    win_rate_interval: z.object({ low: z.number(), high: z.number() }).nullable(),
    mode_accuracy: z.number().nullable(),
    baseline_accuracy: z.number().nullable(),
    verdict: z.enum(['certified', 'provisional', 'not_certified']).nullable(),
    billed_usd: z.number(),
    refunded_usd: z.number(),
  }),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});
