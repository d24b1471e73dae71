import { z } from 'zod';
import type { Scope } from '../../domain/api-keys';
import type { Form } from '../../domain/form';
import { TIERS } from '../../domain/modes';
import { CALLER_ANSWER_KINDS } from '../../domain/aggregation';
import { BATCH_STATES } from '../../domain/runs';
import { proposeMode } from '../../operations/authoring/propose';
import { checkModeSpec, listEngines, listMode, saveMode, type AuthoringDeps } from '../../operations/authoring/modes';
import { describeEvent } from '../../domain/deliberation-events';
import { followSteps } from '../../operations/deliberation-events';
import { workflowIds } from '../../domain/workflow-ids';
import type { JsonObject } from '../forms/json';
import { newRequestId } from '../http/gate';
import { createCompletion, derivedIdempotencyKey } from '../../operations/completion';
import { estimate } from '../../operations/estimate';
import { listModels } from '../../operations/models';
import { askAdvisor } from '../../operations/advisor';
import { approveQuote } from '../../operations/quotes';
import { readReceipt } from '../../operations/receipt';
import type { QuoteRecord } from '../../db/repositories/quotes';
import { launchCertification, launchTestRun, type LaunchView } from '../../operations/run-launch';
import type { TaskWork } from '../../operations/mcp-tasks';
import type { KeyPrincipal } from '../../operations/principal';
import type { RouteDeps } from '../http/context';
import { parseIdempotencyKey, parseRequest } from '../../operations/requests/common';
import { parseBatchId, parseCertifyRequest, parseTestRunRequest } from '../../operations/requests/runs';
import { cancelOrgRun } from '../../operations/run-cancel';
import { listOrgRuns, parseRunListQuery } from '../../operations/run-list';
import { runListBody } from '../forms/run-list';
import { QuorumError } from '../../domain/errors';
import { assertTierPermitted, topTier } from '../../domain/plan-rules';
import { refusalEntry, type ToolKind } from './errors';

/**
 * The MCP tools (spec 02, DESIGN §11), a typed registry in the style of the CLI's `command<T>()`: each tool names its
 * scope, who answers it (which error shape it uses) and the Forms that list it, and calls the same operation as
 * its REST route. Inputs are checked by the same parsers as REST, so a bad argument gets the REST code, not the
 * SDK's; the JSON Schema each tool lists is documentation an agent can act on.
 */
export interface ToolContext {
  deps: RouteDeps;
  auth: KeyPrincipal;
  /** The base URL the caller reached, for status addresses. */
  baseUrl: string;
  /** Sends a progress notification; absent when the caller sent no `progressToken` (nothing is watched then). */
  progress?: (message: string) => Promise<void>;
  /** Told what the call set going (its workflow) once it has, for an MCP task to follow it (issue 40 item 5). */
  started?: (work: TaskWork) => void;
}

/**
 * How a tool runs as an MCP task (issue 40 item 5): `deliberation` answers the task at once and its result when the
 * deliberation ends; `run` answers with the launch (the plain call's result) and ends when the run does.
 */
export type TaskKind = 'deliberation' | 'run';

export interface Tool {
  name: string;
  description: string;
  inputSchema: JsonObject;
  /** Null: the operation checks the scope of what it reads (a run's kind: `tests` or `certify`). */
  scope: Scope | null;
  kind: ToolKind;
  forms: readonly Form[];
  /** Absent: the tool is not offered as a task (`execution.taskSupport` forbidden). */
  task?: TaskKind;
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<JsonObject>;
}

interface ToolSpec<T> {
  name: string;
  description: string;
  input: z.ZodType<T>;
  scope: Scope | null;
  kind: ToolKind;
  forms?: readonly Form[];
  task?: TaskKind;
  run(args: T, ctx: ToolContext): Promise<JsonObject>;
}

function tool<T>(spec: ToolSpec<T>): Tool {
  const schema = z.toJSONSchema(spec.input, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  delete schema.$schema;
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: schema,
    scope: spec.scope,
    kind: spec.kind,
    forms: spec.forms ?? ['A', 'B'],
    task: spec.task,
    // Forwarded tools: the schema documents, and the REST parsers inside `run` check, so a bad value gets the REST
    // code. Self-answered tools have no REST twin: their schema is the check (shape 2, `invalid_request`).
    run: (args, ctx) => spec.run(spec.kind === 'forwarded' ? (args as T) : checked(spec.input, args), ctx),
  };
}

function checked<T>(schema: z.ZodType<T>, args: Record<string, unknown>): T {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue.path.map(String).join('.');
  throw new QuorumError('invalid_request', `${where ? `\`${where}\`: ` : ''}${issue.message}.`, { param: where || null });
}

const anything = z.unknown();
const Messages = z.array(z.object({ role: z.string(), content: anything })).describe('OpenAI-style chat messages: [{role, content}].');

/** The longest a waiting `deliberate` stays silent (MCP clients time out). */
const KEEPALIVE_MS = 10_000;
/** After its result, how long a call waits for its last steps' notes (stored before the result, so milliseconds). */
const LAST_NOTES_MS = 1_000;

/**
 * Reports each of the deliberation's steps as it is stored (issue 40 item 2: the channel a response's stream reads,
 * within milliseconds of the step), and a keep-alive when nothing happened for a while. `work` is told to start the
 * following when its call has a request id.
 */
async function withProgress<T>(ctx: ToolContext, work: (onStarted?: (requestId: string) => Promise<void>) => Promise<T>): Promise<T> {
  const report = ctx.progress;
  // Nobody listening: nothing followed.
  if (!report) return work();
  const stop = new AbortController();
  const started = Date.now();
  let lastSent = started;
  let following: Promise<void> = Promise.resolve();
  const keepAlive = setInterval(() => {
    if (Date.now() - lastSent < KEEPALIVE_MS) return;
    lastSent = Date.now();
    report(`still deliberating (${Math.round((Date.now() - started) / 1000)} s)`).catch(() => undefined);
  }, 1_000);
  try {
    return await work((requestId) => {
      following = followSteps(ctx.deps.db, requestId, stop.signal, async ({ event }) => {
        lastSent = Date.now();
        await report(describeEvent(event));
      }).catch(() => undefined);
      return Promise.resolve();
    });
  } finally {
    clearInterval(keepAlive);
    await Promise.race([following, new Promise((resolve) => setTimeout(resolve, LAST_NOTES_MS))]);
    stop.abort();
    await following;
  }
}

const deliberate = tool({
  name: 'deliberate',
  description:
    'Sends a question to a panel of models and returns the one answer, with where the models agreed and split (in `svc`). Billed like a chat completion (see `estimate` first, free). Takes seconds to minutes: pass a progressToken to receive progress notifications (seats answered, judged, critique rounds, synthesis) while it runs. Retrying with the same messages does not bill twice.',
  input: z.object({
    model: z.string().describe('A mode id (Form A) or ticker (Form B), from `list_modes`.'),
    messages: Messages,
    max_cost_usd: z.number().optional().describe('Lowers this call’s ceiling (Form B).'),
    tier: z.enum(TIERS).optional().describe('Engine tier that fills the seats; default `plus` (Form B).'),
    answer_kind: z
      .enum(CALLER_ANSWER_KINDS, { error: `must be one of ${CALLER_ANSWER_KINDS.join(', ')}` })
      .optional()
      .describe(
        `\`svc.answer_kind\`: how a mode that votes reads the seats' answers (${CALLER_ANSWER_KINDS.join(', ')}); without it only a \`Final answer:\` line is read.`,
      ),
  }),
  scope: 'completions',
  kind: 'forwarded',
  task: 'deliberation',
  async run(args, ctx) {
    const { deps, auth } = ctx;
    const body = parseRequest(
      deps.serialiser.requests.completion,
      {
        model: args.model,
        messages: args.messages,
        tier: args.tier,
        svc:
          args.max_cost_usd === undefined && args.answer_kind === undefined
            ? undefined
            : {
                ...(args.max_cost_usd !== undefined && { max_cost_usd: args.max_cost_usd }),
                ...(args.answer_kind !== undefined && { answer_kind: args.answer_kind }),
              },
      },
      { model: deps.serialiser.requests.completionMissingModel },
    );
    // The REST path derives the same key from the same body, so an agent's retry replays instead of billing again.
    const idempotencyKey = derivedIdempotencyKey(auth.orgId, auth.keyId, body);
    const workflowId = workflowIds.deliberation(auth.orgId, idempotencyKey);
    const started = ctx.started;
    const { outcome, replayed } = await withProgress(ctx, (following) =>
      createCompletion(deps, auth, {
        body,
        idempotencyKey,
        onStarted: async (requestId) => {
          started?.({ workflowId, requestId, idempotencyKey });
          await following?.(requestId);
        },
      }),
    );
    // A replay started nothing: a task follows the stored answer it replays.
    if (replayed) started?.({ workflowId, requestId: outcome.requestId, idempotencyKey, replayed });
    return deps.serialiser.completion(outcome, replayed);
  },
});

const estimateTool = tool({
  name: 'estimate',
  description:
    'Free and instant: quotes a `deliberate` call (price, depth, rounds) and says whether a panel is likely to help on this prompt, from the mode’s test runs when it has any.',
  input: z.object({
    model: z.string().describe('A mode id (Form A) or ticker (Form B).'),
    messages: Messages,
    tier: z.enum(TIERS).optional().describe('Form B: the tier to quote; default `plus`.'),
  }),
  scope: 'estimate',
  kind: 'forwarded',
  async run(args, ctx) {
    const body = parseRequest(ctx.deps.serialiser.requests.estimate, { model: args.model, messages: args.messages, tier: args.tier });
    const requestId = newRequestId('est');
    return ctx.deps.serialiser.estimate(await estimate(ctx.deps, ctx.auth, { requestId, body, startedAt: performance.now() }));
  },
});

const listModes = tool({
  name: 'list_modes',
  description:
    'Lists the modes this key can call, with their prices, per-tier rates, the provider families they send data to and each one’s latest certification (`svc.certification`, null when none) and whether it beat the same money spent on its best engine (`svc.evidence`: the equal-cost arms of its newest run, null when none). Free.',
  input: z.object({}),
  scope: 'models',
  kind: 'forwarded',
  async run(_args, ctx) {
    return { object: 'list', data: (await listModels(ctx.deps, ctx.auth)).map((view) => ctx.deps.serialiser.model(view)) };
  },
});

const getReceipt = tool({
  name: 'get_receipt',
  description:
    'Shows which model sat in each seat of a past deliberation, with scores, cost and latency. Free. `request_id` is `svc.request_id` of a `deliberate` result.',
  input: z.object({
    request_id: z.string().describe('The deliberation’s request id (`req_…`).'),
    include_transcript: z.boolean().optional().describe('Include each seat’s answer text.'),
  }),
  scope: 'receipts',
  kind: 'forwarded',
  async run(args, ctx) {
    const view = await readReceipt(ctx.deps, ctx.auth, {
      requestId: String(args.request_id ?? ''),
      includeTranscript: args.include_transcript,
    });
    return view.available
      ? ctx.deps.serialiser.receipt(view.outcome, view.includeTranscript)
      : ctx.deps.serialiser.noReceipt(view.requestId, view.reason, view.status);
  },
});

/**
 * A launch's own key, as the REST header would carry it. Without one, a retry of the same arguments the same day is
 * the same run all the same (a key derived from them), so an agent that retries after a timeout never pays twice.
 */
const IDEMPOTENCY_KEY_ARG = z
  .string()
  .optional()
  .describe('Optional: a retry with the same key returns the same batch. Without one, identical arguments the same day do.');

/** A launch as the tool answers it; a run that started is told to a task that follows it. */
function launched(ctx: ToolContext, view: LaunchView): JsonObject {
  if (view.run) ctx.started?.({ workflowId: view.run.workflowId, batchId: view.run.id });
  return ctx.deps.serialiser.runs.launch(view, ctx.baseUrl);
}

const runTest = tool({
  name: 'run_test',
  description:
    'Lab test of a mode you own on freshly generated known-answer questions, judged blind by three judges against the mode’s strongest engine alone. Spends real money: per question 25% off what its call would bill, charged up front (pass `dry_run: true` first to price it for free; the launch of the same arguments honours that price). Returns at once with a `batch_id`; poll `status_url` (about a minute per 16 questions).',
  input: z.object({
    model: z.string().describe('A mode you own: id (Form A) or ticker (Form B).'),
    buckets: z.record(z.string(), z.number()).optional().describe('Form A: {light, medium, hard} question counts, 1–100 each.'),
    questions: z.record(z.string(), z.number()).optional().describe('Form B: {easy, medium, hard} question counts; at most 300 in total.'),
    judges: z.array(z.string()).optional().describe('Any of judge_a, judge_b, judge_c; default all three.'),
    judge_repeats: z.number().optional().describe('1 to 3; default 1. Repeats mirror the answer order.'),
    judging_protocol: z.string().optional().describe('`pairwise` (default) or `plurality`.'),
    dry_run: z.boolean().optional().describe('Price and duration only; nothing starts or is charged.'),
    tiers: z.array(z.string()).optional().describe('Form B: tiers to run at (free, plus, pro); default plus.'),
    punch_up: z.boolean().optional().describe('Form B: compare against the next tier’s strongest engine.'),
    svc: z
      .object({
        same_questions_as: z
          .string()
          .optional()
          .describe(
            'A paired re-run: exactly the questions of this earlier run of yours (its `batch_id`), on the mode as it is now; without `buckets` or `questions`. Its poll reports `svc.paired`, the difference in win rate with its interval.',
          ),
      })
      .optional(),
    idempotency_key: IDEMPOTENCY_KEY_ARG,
  }),
  scope: 'tests',
  kind: 'forwarded',
  task: 'run',
  async run(args, ctx) {
    const request = parseTestRunRequest(ctx.deps.form, args as Record<string, unknown>);
    const idempotencyKey = parseIdempotencyKey(args.idempotency_key);
    return launched(ctx, await launchTestRun(ctx.deps, ctx.auth, { request, idempotencyKey }));
  },
});

const certifyMode = tool({
  name: 'certify_mode',
  description:
    'Starts the certification of a mode you own: 150 fresh questions, three blind judges, two repeats, a verdict from the 95% lower bound. Commits $50 flat, charged up front (`dry_run: true` prices it for free). Returns at once with a `batch_id`; poll `status_url` (minutes to hours, by the engines’ speed).',
  input: z.object({ model: z.string().describe('A mode you own.'), dry_run: z.boolean().optional(), idempotency_key: IDEMPOTENCY_KEY_ARG }),
  scope: 'certify',
  kind: 'forwarded',
  task: 'run',
  async run(args, ctx) {
    const request = parseCertifyRequest(args as Record<string, unknown>);
    const idempotencyKey = parseIdempotencyKey(args.idempotency_key);
    return launched(ctx, await launchCertification(ctx.deps, ctx.auth, { ...request, idempotencyKey }));
  },
});

function authoringDeps(ctx: ToolContext): AuthoringDeps {
  const { db, form, engines, config } = ctx.deps;
  return { db, form, engines, config };
}

const ModeId = z.string().min(1).describe('The mode’s id or ticker (COMPANY:MODE).');
const Spec = z
  .record(z.string(), z.unknown())
  .describe(
    'A mode spec: its JSON Schema is `components.schemas.ModeSpec` of GET /openapi.json; `validate_mode` lists every refusal with its code.',
  );

const listEnginesTool = tool({
  name: 'list_engines',
  description:
    'Lists the engines that can fill a mode’s seats, up to a tier, with family, maker, prices, limits and whether each can run here now (`available`: yes, no, or stand_in where another engine answers for it) and which engine would answer a seat of it now (`answers`: itself, its real backup, or a simulated engine in development). Free. Next: write a spec and call `validate_mode`.',
  input: z.object({ tier: z.enum(TIERS).optional().describe('The highest tier to list; default all.') }),
  scope: 'models',
  kind: 'self_answered',
  forms: ['B'],
  async run(args, ctx) {
    const deps = authoringDeps(ctx);
    // A connected app lists up to its plan's highest tier; a tier the plan does not include is refused as a call's is.
    const plan = ctx.auth.app?.plan;
    if (plan && args.tier) assertTierPermitted(plan, args.tier);
    const tier = args.tier ?? (plan ? topTier(plan) : 'pro');
    return { object: 'list', tier, data: (await listEngines(deps, ctx.auth, tier)) as JsonObject[] };
  },
});

const validateModeTool = tool({
  name: 'validate_mode',
  description:
    'Checks a mode spec against every rule a save runs and lists each refusal with its code and path (`refusals[].body.error`); nothing is saved. Free and instant. Next: fix and validate again, then `save_mode`.',
  input: z.object({ spec: Spec, mode_id: ModeId.optional().describe('The mode the spec would replace, if any.') }),
  scope: 'modes:write',
  kind: 'self_answered',
  forms: ['B'],
  async run(args, ctx) {
    const deps = authoringDeps(ctx);
    const result = await checkModeSpec(deps, ctx.auth, { spec: args.spec, modeId: args.mode_id });
    return { valid: result.valid, refusals: result.refusals.map(refusalEntry) };
  },
});

const saveModeTool = tool({
  name: 'save_mode',
  description:
    'Saves a mode spec as a draft, callable at once as `TICKER:LAB` by your organisation (and organisations you invite). `release: true` makes the draft the next version, callable by ticker with a new mode_config_hash; `{mode_id, release: true}` releases the stored draft. Free. A refused spec is `mode_invalid` with `svc.refusals`.',
  input: z.object({
    spec: Spec.optional(),
    mode_id: ModeId.optional().describe('Save over this mode’s draft (omit to create a mode).'),
    release: z.boolean().optional().describe('Release after saving (or release the stored draft when no spec is given).'),
  }),
  scope: 'modes:write',
  kind: 'self_answered',
  forms: ['B'],
  async run(args, ctx) {
    const deps = authoringDeps(ctx);
    return { ...(await saveMode(deps, ctx.auth, { spec: args.spec, modeId: args.mode_id, release: args.release })) } as JsonObject;
  },
});

const listModeTool = tool({
  name: 'list_mode',
  description:
    'Publishes a released mode to the marketplace: every organisation then sees it in `/v1/models` and may call it, and it may be certified. Free. An operator reviews listings.',
  input: z.object({ mode_id: ModeId }),
  scope: 'modes:write',
  kind: 'self_answered',
  forms: ['B'],
  async run(args, ctx) {
    const deps = authoringDeps(ctx);
    return { ...(await listMode(deps, ctx.auth, args.mode_id)) } as JsonObject;
  },
});

const askAdvisorTool = tool({
  name: 'ask_advisor',
  description:
    'Asks the mode advisor about one of your modes: where its test results are thin (buckets whose 95% interval is wider than ±0.1, with the numbers), how many more questions per bucket would narrow them, whether it is ready to certify (the projected lower bound), what its recent calls show (fallbacks, cut-off answers, seat disagreement, cost against the quote), and a `quote` for the run it recommends (or `quote_unavailable` with the reason). Free, computed from your own runs and receipts in a second. Next: `approve_quote` with `quote.quote_id`.',
  input: z.object({
    model: z.string().min(1).describe('Your mode’s ticker, without `:LAB` or `@version`.'),
    question: z.string().max(2_000).optional().describe('What you want to know; echoed beside the computed advice.'),
    batch_id: z.string().optional().describe('Advise on this run alone instead of every run of the current version.'),
  }),
  scope: 'tests',
  kind: 'self_answered',
  forms: ['B'],
  async run(args, ctx) {
    const result = await askAdvisor(ctx.deps, ctx.auth, { model: args.model, question: args.question, batchId: args.batch_id });
    return ctx.deps.serialiser.runs.advice(result);
  },
});

const approveQuoteTool = tool({
  name: 'approve_quote',
  description:
    'Approves a price the advisor quoted and launches exactly that run, once, at no more than the quoted price (charged up front, as run_test and certify_mode are). Approving the same quote again never launches twice: it answers 409 `quote_already_used` with the run in `svc.batch_id`. An expired quote is 410 `quote_expired`; a price that rose is 409 `requoted` with a new quote in `svc.quote`. Returns the batch id and status_url at once.',
  input: z.object({ quote_id: z.string().describe('`quote.quote_id` from ask_advisor.') }),
  scope: 'tests',
  kind: 'self_answered',
  forms: ['B'],
  async run(args, ctx) {
    const runs = ctx.deps.serialiser.runs;
    try {
      return runs.approval(await approveQuote(ctx.deps, ctx.auth, args.quote_id), ctx.baseUrl);
    } catch (err) {
      // The new quote travels as a record below the edge; agents get it in the Form's words.
      const requote = err instanceof QuorumError && err.code === 'requoted' ? (err.detail?.quote as QuoteRecord | undefined) : undefined;
      if (requote) throw new QuorumError('requoted', (err as QuorumError).message, { detail: { quote: runs.quote(requote) } });
      throw err;
    }
  },
});

const proposeModeTool = tool({
  name: 'advisor_propose_mode',
  description:
    'Designs a whole mode from a description: seats from three different makers in every panel tier up to `tier`, backups of the same tier, judge and synthesis from makers holding the fewest seats, rounds and critique from what the description asks, fees at the price floor, priced per call (light, medium, deep) against `budget_usd`. The proposal already passes `validate_mode`; nothing is saved. Free. Next: `save_mode {spec: proposal, release: true}`.',
  input: z.object({
    description: z.string().min(1).max(2_000).describe('What the mode is for, in plain words.'),
    budget_usd: z.number().positive().optional().describe('The most a deep call should cost at its top tier.'),
    tier: z.enum(TIERS).optional().describe('The highest tier to seat; default pro.'),
  }),
  scope: 'models',
  kind: 'self_answered',
  forms: ['B'],
  async run(args, ctx) {
    const deps = authoringDeps(ctx);
    return proposeMode(deps, ctx.auth, { description: args.description, budgetUsd: args.budget_usd, tier: args.tier });
  },
});

/**
 * Issue 28: runs as agents drive them, forwarded to GET /v1/runs and POST /v1/{tests,certify}/{id}/cancel (their
 * codes). Form B only: spec 02 names Form A's six tools, and Form A's callers have the REST routes.
 */
const listRunsTool = tool({
  name: 'list_runs',
  description:
    'Lists your organisation’s test runs and certifications, newest first, each as its poll shows it (state, progress, billed and refunded, results, and a certification’s verdict once it ended). Free. Filter by `kind` (test or certify), `model` (as launched) and `state`; page with `after` set to the `last_id` of the page before while `has_more`. Lists the kinds this key’s scopes read (tests, certify).',
  input: z.object({
    limit: z.number().int().optional().describe('Runs per page, 1 to 100; default 20.'),
    after: z.string().optional().describe('`last_id` of the page before.'),
    kind: z.enum(['test', 'certify']).optional(),
    model: z.string().optional().describe('Only runs launched with this `model` (a mode id in Form A, a ticker in Form B).'),
    state: z.enum(BATCH_STATES).optional(),
  }),
  scope: null,
  kind: 'forwarded',
  forms: ['B'],
  async run(args, ctx) {
    // The REST query's parser, on the same values as text, so a bad argument gets the REST code.
    const query = Object.fromEntries(Object.entries(args).map(([k, v]) => [k, typeof v === 'number' ? String(v) : v]));
    return runListBody(ctx.deps.serialiser.runs, await listOrgRuns(ctx.deps, ctx.auth, parseRunListQuery(query)));
  },
});

const cancelRunTool = tool({
  name: 'cancel_run',
  description:
    'Stops a test run or certification of yours that is still going: the questions in flight are abandoned, and the run ends `cancelled` and is refunded as any end is (no verdict, no charge: a certification in full, a test run each unjudged question’s own price); returns the run as its poll shows it (usually already cancelled, within seconds). A run that had already ended is returned unchanged, so cancelling twice is harmless. Free.',
  input: z.object({ batch_id: z.string().describe('The run’s `batch_id`.') }),
  scope: null,
  kind: 'forwarded',
  forms: ['B'],
  async run(args, ctx) {
    const { view } = await cancelOrgRun(ctx.deps, ctx.auth, { batchId: parseBatchId(args.batch_id) });
    return ctx.deps.serialiser.runs.poll(view);
  },
});

/** Every tool; a Form lists those marked for it. */
export const TOOLS: readonly Tool[] = [
  deliberate,
  estimateTool,
  listModes,
  getReceipt,
  runTest,
  certifyMode,
  listEnginesTool,
  validateModeTool,
  saveModeTool,
  listModeTool,
  askAdvisorTool,
  approveQuoteTool,
  proposeModeTool,
  listRunsTool,
  cancelRunTool,
];

export function toolsFor(form: Form): Tool[] {
  return TOOLS.filter((t) => t.forms.includes(form));
}
