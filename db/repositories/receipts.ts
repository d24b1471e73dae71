import type { Knex } from 'knex';
import type { Classification, Lane } from '../../domain/classifier';
import type { Tier } from '../../domain/modes';
import { QuorumError } from '../../domain/errors';
import type { Outcome, ReceiptStatus, Settlement } from '../../domain/outcome';
import { storableJson } from '../../domain/storable-text';
import { preparedAs } from '../prepared';
import * as ledger from './ledger';
import { countSettledCall } from './mode-call-stats';
import { settlePlanCharge } from './plans';
import { isDeterministicDbError, type DbOrTrx } from './shared';

/** Every amount the settlement writes must be a whole, non-negative number of micro-dollars. */
function unreadableAmounts(o: Outcome): string[] {
  const amounts: Record<string, number> = {
    gateway: o.money.gatewayMicros,
    platform_fee: o.money.platformFeeMicros,
    mode_fee: o.money.modeFeeMicros,
    cap_credit: o.money.capCreditMicros,
    billed: o.money.billedMicros,
    ...Object.fromEntries(
      o.seatPasses.flatMap((p) => [
        [`${p.role}_r${p.round}_cost`, p.realCostMicros],
        [`${p.role}_r${p.round}_fee`, p.feeMicros],
      ]),
    ),
  };
  return Object.entries(amounts)
    .filter(([, v]) => !Number.isSafeInteger(v) || v < 0)
    .map(([k, v]) => `${k}=${v}`);
}

/**
 * The statement inserting a call's seat rows, once its receipt was (the `receipt` CTE of the settle); an organisation
 * that keeps no transcripts (issue 41 item 5) has their texts written blank.
 */
function seatRowsInsert(q: Knex, o: Outcome): Knex.Raw {
  const seats = o.seatPasses.map((p) => ({
    request_id: o.requestId,
    role: p.role,
    round_number: p.round,
    model_used: p.modelUsed,
    original_model: p.originalModel,
    fallback_used: p.fallbackUsed,
    tokens_in: p.tokensIn,
    tokens_out: p.tokensOut,
    started_at: p.startedAt,
    ended_at: p.endedAt,
    latency_ms: p.latencyMs,
    judge_score: p.judgeScore,
    is_best_seat: p.isBest,
    source: p.source,
    real_cost_micros: p.realCostMicros,
    fee_rate_ppm: p.feeRatePpm,
    fee_micros: p.feeMicros,
    content: p.content,
  }));
  const columns = Object.keys(seats[0] ?? { request_id: null });
  // The organisation's retention read once for all the seats, not per row.
  const selected = columns.map((c) => (c === 'content' ? "case when zr.zero then '' else content end" : c));
  return q.raw(
    `insert into receipt_seats (${columns.join(', ')})
     select ${selected.join(', ')} from jsonb_populate_recordset(null::receipt_seats, cast(:seats as jsonb)),
            (select zero_retention(:orgId) as zero) zr
      where exists (select 1 from receipt)`,
    { seats: JSON.stringify(seats), orgId: o.orgId },
  );
}

/**
 * Charge, receipt, seat passes and the request's final state, all or nothing; idempotent by request id, so a retried
 * settle never charges twice. A live key is charged (Form B in full with the excess credited back, Form A held at the
 * ceiling); a connected app's call on a plan charges its real cost to the plan's ledger and leaves the organisation's
 * balance alone; a test key's call is recorded and bills nothing. `cost_unreadable` when the outcome cannot be written
 * at all (a retry would fail the same way). A held call's usual settle is one statement (`ledger.settleAtOnce`);
 * whatever it leaves (a settle already made, a trial commitment, a low-balance alert, no hold) settles in a transaction.
 */
export async function settleOutcome(db: Knex, input: Settlement): Promise<void> {
  // An engine's text is stored whatever characters it holds: a settle never fails on what a provider returned.
  const o = storableJson(input.outcome);
  const unreadable = unreadableAmounts(o);
  if (unreadable.length > 0)
    throw new QuorumError('cost_unreadable', `The call's cost cannot be read (${unreadable.join(', ')}); nothing was billed.`);
  const charge = balanceCharge(input, o);
  try {
    if (charge) {
      const money = ledger.settleAtOnce(db, charge);
      // Prepared (db/prepared.ts): its text is fixed for a given number of seat passes and entries, every value a
      // binding; built once here, then sent as that text, which knex would otherwise build again.
      const { sql, bindings } = withCtes(receiptStatement(db, input, o, money.guard, money.ok), money.writes).toSQL();
      const written = await db.raw<{ rows: { request_id: string }[] }>(sql, bindings).options(preparedAs(sql));
      if (written.rows.length > 0) return;
    }
    await db.transaction(async (trx) => {
      const inserted = await receiptStatement(trx, input, o, 'true');
      if (inserted.length === 0) return;
      if (input.billed && o.payer === 'plan')
        await settlePlanCharge(trx, { requestId: o.requestId, chargeMicros: BigInt(o.money.billedMicros) });
      else if (charge) await ledger.settleIn(trx, charge);
    });
  } catch (err) {
    if (!isDeterministicDbError(err)) throw err;
    throw new QuorumError(
      'cost_unreadable',
      'The deliberation could not be recorded; nothing was billed. Retry with the same Idempotency-Key.',
    );
  }
}

/** What a call billed to the organisation's balance charges it (none for a test key or a plan's call). */
function balanceCharge(input: Settlement, o: Outcome): ledger.SettleInput | undefined {
  if (!input.billed || o.payer === 'plan') return undefined;
  const gross = o.money.gatewayMicros + o.money.platformFeeMicros + o.money.modeFeeMicros;
  return {
    orgId: o.orgId,
    requestId: o.requestId,
    chargeMicros: BigInt(input.form === 'B' ? gross : o.money.billedMicros),
    capCreditMicros: BigInt(o.money.capCreditMicros),
  };
}

type Ctes = [string, Knex.Raw | Knex.QueryBuilder][];
type Statement = Knex.QueryBuilder<Record<string, unknown>, { request_id: string }[]>;

function withCtes(statement: Statement, ctes: Ctes): Statement {
  return ctes.reduce((q, [name, cte]) => q.with(name, cte), statement);
}

/**
 * The receipt, its seat passes, the request's end and the mode's call count in one statement, the receipt first: its
 * key says whether this request was settled already (a retried settle changes nothing, and the rest is skipped with
 * it). The receipt is written only where `guard` holds, after the `before` expressions it reads. Returns the receipt's
 * request id when it was written.
 */
function receiptStatement(q: Knex, input: Settlement, o: Outcome, guard: string, before: Ctes = []): Statement {
  const ended = q('requests')
    .where({ id: o.requestId })
    .whereExists(q.select(q.raw('1')).from('receipt'))
    .update({
      // Form B's capped call may run again under its key; Form A's is a finished answer. A cancelled one keeps its
      // status (issue 40), and its key may run again.
      state: o.status === 'cancelled' ? 'cancelled' : o.status === 'capped' && input.form === 'B' ? 'capped' : 'succeeded',
      finish_reason: o.finishReason,
      answer_truncated: o.finishReason === 'length',
      seats_answered: o.seatsAnswered,
      completed_at: o.completedAt,
    });
  const counted = countSettledCall(q, {
    requestId: o.requestId,
    modeId: o.modeId,
    configHash: o.configHash,
    tier: o.tier,
    promptTokens: o.usage.promptTokens,
    completionTokens: o.usage.completionTokens,
    modeFeeMicros: o.money.modeFeeMicros,
    paidByPlan: o.payer === 'plan',
    aggregation: o.aggregation,
  });
  return withCtes(q.select('request_id').from('receipt') as Statement, [
    ...before,
    ['receipt', receiptInsert(q, input, o, guard)],
    ['seats', seatRowsInsert(q, o)],
    ['ended', ended],
    ['counted', counted],
  ]);
}

/**
 * The receipt's row where `guard` holds, typed by the table itself (`jsonb_populate_record`). An organisation that
 * keeps no transcripts (issue 41 item 5) has the texts blanked as they are written.
 */
function receiptInsert(q: Knex, input: Settlement, o: Outcome, guard: string): Knex.Raw {
  const row = {
    request_id: o.requestId,
    org_id: o.orgId,
    mode_id: o.modeId,
    mode_version: input.modeVersion,
    config_hash: o.configHash,
    status: o.status,
    lane: o.lane,
    tier: o.tier,
    gateway_micros: o.money.gatewayMicros,
    platform_fee_micros: o.money.platformFeeMicros,
    mode_fee_micros: o.money.modeFeeMicros,
    cap_credit_micros: o.money.capCreditMicros,
    billed_micros: o.money.billedMicros,
    prompt_tokens: o.usage.promptTokens,
    completion_tokens: o.usage.completionTokens,
    latency_ms: o.latencyMs,
    outcome: o,
    created_at: o.createdAt,
    completed_at: o.completedAt,
  };
  const columns = Object.keys(row).filter((c) => c !== 'outcome');
  return q.raw(
    `insert into receipts (${columns.join(', ')}, outcome, transcript_deleted_at)
     select ${columns.map((c) => `r.${c}`).join(', ')},
            case when v.zero then blank_transcript(r.outcome, 'zero_retention') else r.outcome end,
            case when v.zero then now() end
       from jsonb_populate_record(null::receipts, cast(:row as jsonb)) r, (select zero_retention(:orgId) as zero) v
      where ${guard}
     on conflict (request_id) do nothing
     returning request_id`,
    { row: JSON.stringify(row), orgId: o.orgId },
  );
}

/** What the advisor reads of one recent call: enough to re-quote it and to count fallbacks, cut-offs and splits. */
export interface RecentCall {
  tier: Tier;
  promptTokens: number;
  billedMicros: number;
  classification: Classification;
  finishReason: string;
  converged: boolean | null;
  substitutions: number;
}

/** An organisation's latest calls of a mode (its own receipts only), newest first. */
/**
 * The organisation's latest calls of a mode, newest first. A test key's call answered on `sim` engines and is never
 * evidence (DESIGN §10); a call's key is its request's `api_key_id` (a connected app's `app:…` names no key row and
 * runs real engines, so it counts).
 */
export async function recentCalls(db: DbOrTrx, input: { orgId: string; modeId: string; limit: number }): Promise<RecentCall[]> {
  const rows = (await db('receipts as x')
    .join('requests as r', 'r.id', 'x.request_id')
    .leftJoin('api_keys as k', 'k.id', 'r.api_key_id')
    .where({ 'x.org_id': input.orgId, 'x.mode_id': input.modeId })
    .whereRaw("k.mode is distinct from 'test'")
    .orderBy('x.created_at', 'desc')
    .limit(input.limit)
    .select(
      'x.tier',
      'x.prompt_tokens',
      'x.billed_micros',
      db.raw("x.outcome->'classification' as classification"),
      db.raw("x.outcome->>'finishReason' as finish_reason"),
      db.raw("(x.outcome->>'converged')::boolean as converged"),
      db.raw("coalesce(jsonb_array_length(x.outcome->'substitutions'), 0) as substitutions"),
    )) as {
    tier: Tier;
    prompt_tokens: number;
    billed_micros: bigint | string;
    classification: Classification;
    finish_reason: string;
    converged: boolean | null;
    substitutions: number;
  }[];
  return rows.map((r) => ({
    tier: r.tier,
    promptTokens: r.prompt_tokens,
    billedMicros: Number(r.billed_micros),
    classification: r.classification,
    finishReason: r.finish_reason,
    converged: r.converged,
    substitutions: Number(r.substitutions),
  }));
}

/** One line of the console's list of calls: what a person scans for, without the answers' text. */
export interface ReceiptLine {
  requestId: string;
  createdAt: Date;
  modeId: string;
  ticker: string;
  lane: Lane | null;
  tier: Tier;
  status: ReceiptStatus;
  seats: number;
  seatsAnswered: number;
  /** Seat passes and staff calls that ran on a backup engine. */
  fallbacks: number;
  billedMicros: number;
  /** Form B: what was credited back over the call's ceiling (0 under it, and always on Form A). */
  capCreditMicros: number;
  latencyMs: number;
}

/** An organisation's receipts, newest first, a page at a time. */
export async function listReceipts(db: DbOrTrx, input: { orgId: string; limit: number; offset: number }): Promise<ReceiptLine[]> {
  const rows = (await db('receipts')
    .where({ org_id: input.orgId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'request_id', order: 'desc' },
    ])
    .limit(input.limit)
    .offset(input.offset)
    .select(
      'request_id',
      'created_at',
      'mode_id',
      'lane',
      'tier',
      'status',
      'billed_micros',
      'cap_credit_micros',
      'latency_ms',
      db.raw("outcome->>'ticker' as ticker"),
      db.raw("(outcome->>'seats')::int as seats"),
      db.raw("(outcome->>'seatsAnswered')::int as seats_answered"),
      // Counted in the stored outcome, so the list never reads the seats' answers.
      db.raw(`(select count(*)::int from jsonb_array_elements(outcome->'seatPasses') p where (p->>'fallbackUsed')::boolean)
        + coalesce((outcome#>>'{staff,judge,fallbackUsed}')::boolean, false)::int
        + coalesce((outcome#>>'{staff,synthesis,fallbackUsed}')::boolean, false)::int as fallbacks`),
    )) as {
    request_id: string;
    created_at: Date;
    mode_id: string;
    lane: Lane | null;
    tier: Tier;
    status: ReceiptStatus;
    billed_micros: bigint | string;
    cap_credit_micros: bigint | string;
    latency_ms: number;
    ticker: string;
    seats: number;
    seats_answered: number;
    fallbacks: number;
  }[];
  return rows.map((r) => ({
    requestId: r.request_id,
    createdAt: r.created_at,
    modeId: r.mode_id,
    ticker: r.ticker,
    lane: r.lane,
    tier: r.tier,
    status: r.status,
    seats: r.seats,
    seatsAnswered: r.seats_answered,
    fallbacks: r.fallbacks,
    billedMicros: Number(r.billed_micros),
    capCreditMicros: Number(r.cap_credit_micros),
    latencyMs: r.latency_ms,
  }));
}
