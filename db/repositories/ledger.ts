import type { Knex } from 'knex';
import { fitsKeyBudget, monthStartUtc, type KeyBudgetFigures } from '../../domain/api-keys';
import { QuorumError } from '../../domain/errors';
import { trialCatchUpMicros } from '../../domain/trial';
import { preparedAs } from '../prepared';
import { raiseLowBalance } from './account-events';
import { keyMonthSpend } from './api-keys';
import { asRefusal, billingRefusal, billingRefusalError } from './billing';
import { unknownOrgAsNotFound, type DbOrTrx } from './shared';

/**
 * Prepaid balances and their append-only ledger, in integer micro-dollars (DESIGN §7).
 * Every balance change goes through `postEntries`: one conditional UPDATE of the balance row plus its ledger
 * entries in the same transaction, so Σ amount = balance and Σ reserved_delta = reserved always hold, and
 * the WHERE clause (and the table's check constraint behind it) makes an overspend impossible under any concurrency.
 */

export const LEDGER_KINDS = [
  'top_up',
  'trial_credit',
  'trial_expiry',
  'reservation',
  'release',
  'charge',
  'cap_credit',
  'test_run_charge',
  'run_refund',
] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];
export type ChargeKind = Extract<LedgerKind, 'charge' | 'test_run_charge'>;

export interface Balance {
  balanceMicros: bigint;
  reservedMicros: bigint;
  availableMicros: bigint;
}

export interface NewLedgerEntry {
  kind: LedgerKind;
  /** Effect on the balance. */
  amountMicros: bigint;
  /** Effect on the reserved amount. */
  reservedDeltaMicros?: bigint;
  requestId?: string;
  note?: string;
}

export interface LedgerEntry {
  id: string;
  kind: LedgerKind;
  amountMicros: bigint;
  reservedDeltaMicros: bigint;
  requestId: string | null;
  note: string | null;
  createdAt: Date;
}

interface BalanceRow {
  balance_micros: bigint;
  reserved_micros: bigint;
}

const toBalance = (row: BalanceRow): Balance => ({
  balanceMicros: row.balance_micros,
  reservedMicros: row.reserved_micros,
  availableMicros: row.balance_micros - row.reserved_micros,
});

function requireNonNegative(name: string, value: bigint): void {
  if (value < 0n) throw new QuorumError('invalid_request', `${name} must not be negative`, { param: name });
}

async function assertOrganisationExists(db: DbOrTrx, orgId: string): Promise<void> {
  const row = await db('balances').where({ org_id: orgId }).first('org_id');
  if (!row) throw new QuorumError('not_found', `no organisation ${orgId}`);
}

/**
 * Applies the entries' summed deltas only if the result keeps 0 ≤ reserved ≤ balance, then appends them.
 * Returns the new balance, or undefined when the condition failed (nothing written). Call inside a transaction.
 * Entries that start billed work name its amount in `admitMicros`: the same UPDATE then also requires that no
 * billing state of the organisation refuses it (`billing_refusal`, migration 013), so the limit holds under races.
 * Entries that settle one of an expired trial's commitments also deduct what it freed of the unused trial credit, in
 * the same transaction (`settleTrialCommitments`).
 */
export async function postEntries(
  trx: Knex.Transaction,
  orgId: string,
  entries: readonly NewLedgerEntry[],
  admitMicros?: bigint,
): Promise<Balance | undefined> {
  const row = await applyEntries(trx, orgId, entries, admitMicros);
  if (!row) return undefined;
  // Issue 41 item 4: the charge that takes the balance below its threshold raises `balance.low`, once per fall. The
  // threshold and the flag come back from the same UPDATE: no round trip unless this charge is the one.
  const charge = entries.find((e) => e.amountMicros < 0n && e.requestId);
  if (charge?.requestId && !row.low_alerted && row.balance_micros < row.low_balance_micros)
    await raiseLowBalance(trx, {
      orgId,
      requestId: charge.requestId,
      balanceMicros: row.balance_micros,
      thresholdMicros: row.low_balance_micros,
    });
  if (row.trial_due_micros === null) return toBalance(row);
  return settleTrialCommitments(trx, orgId, entries, { ...row, trial_due_micros: row.trial_due_micros });
}

interface PostedRow extends BalanceRow {
  /** Set while an expired trial has open commitments (migration 017). */
  trial_due_micros: bigint | null;
  /** The `balance.low` threshold and whether this fall was alerted already (migration 030). */
  low_balance_micros: bigint;
  low_alerted: boolean;
}

/** `postEntries` itself: the conditional UPDATE and the appended entries, under the balance row's lock. */
async function applyEntries(
  trx: Knex.Transaction,
  orgId: string,
  entries: readonly NewLedgerEntry[],
  admitMicros?: bigint,
): Promise<PostedRow | undefined> {
  const [ctes, bindings] = posting(orgId, entries, admitMicros);
  const { rows } = await trx.raw<{ rows: PostedRow[] }>(`${ctes} select * from posted`, bindings);
  return rows[0];
}

/**
 * The statement of `applyEntries` but its final select: the entries are appended only if the conditional update
 * applied (`posted`), in their order (ledger ids follow it), in one round trip. With `hold`, the update also requires that the request has no
 * reservation yet, and its reservation row is inserted with the entries (see `holdAtOnce`).
 */
function posting(
  orgId: string,
  entries: readonly NewLedgerEntry[],
  admitMicros?: bigint,
  hold?: ReserveInput,
): [string, Record<string, string | boolean | (string | null)[]>] {
  const balanceDelta = entries.reduce((sum, e) => sum + e.amountMicros, 0n);
  const reservedDelta = entries.reduce((sum, e) => sum + (e.reservedDeltaMicros ?? 0n), 0n);
  const admitted = admitMicros === undefined ? '' : 'and billing_refusal(org_id, :admit) is null';
  const sql = `with posted as (
       update balances
          set balance_micros = balance_micros + :bd, reserved_micros = reserved_micros + :rd, updated_at = now(),
              low_alerted = low_alerted and balance_micros + :bd < low_balance_micros
        where org_id = :orgId
          and reserved_micros + :rd >= 0
          and balance_micros + :bd >= reserved_micros + :rd
          ${admitted}
          and not (:holds and exists (select 1 from reservations where org_id = :orgId and request_id = :holdId))
        returning balance_micros, reserved_micros, trial_due_micros, low_balance_micros, low_alerted),
     appended as (
       insert into ledger_entries (org_id, kind, amount_micros, reserved_delta_micros, request_id, note)
       select :orgId, e.kind, e.amount, e.reserved, e.request_id, e.note
         from posted,
              unnest(cast(:kinds as text[]), cast(:amounts as bigint[]), cast(:reserved as bigint[]), cast(:requestIds as text[]),
                     cast(:notes as text[])) with ordinality as e(kind, amount, reserved, request_id, note, n)
        order by e.n),
     held as (
       insert into reservations (org_id, request_id, amount_micros, state)
       select :orgId, :holdId, :holdMicros, 'held' from posted where :holds)`;
  return [
    sql,
    {
      bd: balanceDelta.toString(),
      rd: reservedDelta.toString(),
      orgId,
      admit: (admitMicros ?? 0n).toString(),
      holds: hold !== undefined,
      holdId: hold?.requestId ?? '',
      holdMicros: (hold?.amountMicros ?? 0n).toString(),
      kinds: entries.map((e) => e.kind),
      amounts: entries.map((e) => e.amountMicros.toString()),
      reserved: entries.map((e) => (e.reservedDeltaMicros ?? 0n).toString()),
      requestIds: entries.map((e) => e.requestId ?? null),
      notes: entries.map((e) => e.note ?? null),
    },
  ];
}

/** Postgres's unique_violation. */
const UNIQUE_VIOLATION = '23505';

/** Runs that can no longer refund anything. */
const ENDED_RUN_STATES = "('completed','failed','cancelled')";

/**
 * The trial's commitments (migration 017; domain/trial.ts): a hold or a run charge that was open when the trial
 * expired, with `trial_due_micros` the unused trial credit the expiry could not deduct yet. When entries settle one —
 * a hold's charge and cap credit, or its release; a run's refund — what it spent or gave back is counted, and what the
 * holds still open can no longer spend is deducted now: from money these entries just freed, under the lock they hold.
 * Once no commitment is open the organisation is done with its trial. Called with the row the entries left.
 */
async function settleTrialCommitments(
  trx: Knex.Transaction,
  orgId: string,
  entries: readonly NewLedgerEntry[],
  row: PostedRow & { trial_due_micros: bigint },
): Promise<Balance> {
  const ids = [...new Set(entries.flatMap((e) => (e.requestId && e.kind !== 'trial_expiry' ? [e.requestId] : [])))];
  if (ids.length === 0) return toBalance(row);
  // Any entry of a commitment after the expiry settles it: a hold is settled or released once, a run refunds once.
  const closed = (await trx('trial_commitments').where({ org_id: orgId }).whereIn('request_id', ids).del().returning('request_id')) as {
    request_id: string;
  }[];
  if (closed.length === 0) return toBalance(row);
  const settled = new Set(closed.map((c) => c.request_id));
  // A charge (less its cap credit) spent trial credit; a refund gave some back.
  const due = entries.reduce((sum, e) => (e.requestId && settled.has(e.requestId) ? sum + e.amountMicros : sum), row.trial_due_micros);
  const { rows } = await trx.raw<{ rows: { held: bigint; open: number }[] }>(
    `select coalesce(sum(c.amount_micros) filter (where c.kind = 'hold'), 0)::bigint as held, count(*)::int as open
       from trial_commitments c
      where c.org_id = :orgId
        and (c.kind = 'hold'
             or not exists (select 1 from runs r where r.org_id = c.org_id and r.id::text = c.request_id and r.state in ${ENDED_RUN_STATES}))`,
    { orgId },
  );
  const { held, open } = rows[0];
  const deduction = trialCatchUpMicros({ dueMicros: due, openHeldMicros: held, availableMicros: row.balance_micros - row.reserved_micros });
  let after: BalanceRow = row;
  if (deduction > 0n) {
    const posted = await applyEntries(trx, orgId, [
      {
        kind: 'trial_expiry',
        amountMicros: -deduction,
        requestId: closed[0].request_id,
        note: 'unused trial credit, freed by a call in flight at the expiry',
      },
    ]);
    if (!posted) throw new Error(`trial deduction for ${orgId} exceeded the locked available balance`);
    after = posted;
  }
  // No commitment left (runs that ended without a refund have nothing more to give back): the trial is settled.
  if (open === 0) await trx('trial_commitments').where({ org_id: orgId }).del();
  await trx('balances')
    .where({ org_id: orgId })
    .update({ trial_due_micros: open === 0 ? null : (due - deduction).toString() });
  return toBalance(after);
}

/** Billed work: a call's hold or a run's up-front charge. */
export type BilledWork = 'call' | 'run';

const insufficientBalance = (work: BilledWork): QuorumError =>
  new QuorumError('insufficient_balance', `The prepaid balance does not cover this ${work}; add funds to continue.`);

/** `postEntries` that must succeed: a failed condition is `insufficient_balance` (or `not_found` for an unknown org). */
async function postOrThrow(trx: Knex.Transaction, orgId: string, entries: readonly NewLedgerEntry[]): Promise<Balance> {
  const balance = await postEntries(trx, orgId, entries);
  if (balance) return balance;
  await assertOrganisationExists(trx, orgId);
  throw insufficientBalance('call');
}

/**
 * `postEntries` for entries that start billed work of `amountMicros`. Refused, it throws why: a billing state's code
 * (`no_billing_configured`, `verification_required`, `quota_exceeded`) before `insufficient_balance`.
 */
/** Admissions of one piece of work before a refusal that no longer reads as a billing state is the balance's. */
const ADMIT_ATTEMPTS = 3;

export async function postAdmitted(
  trx: Knex.Transaction,
  orgId: string,
  entries: readonly NewLedgerEntry[],
  work: { kind: BilledWork; amountMicros: bigint },
): Promise<Balance> {
  // A refusal is read again to name it; when by then nothing refuses (a hold was released meanwhile), admit again.
  for (let attempt = 1; ; attempt++) {
    const balance = await postEntries(trx, orgId, entries, work.amountMicros);
    if (balance) return balance;
    await assertOrganisationExists(trx, orgId);
    const refusal = await billingRefusal(trx, orgId, work.amountMicros);
    if (refusal) throw billingRefusalError(refusal);
    if (attempt === ADMIT_ATTEMPTS) throw insufficientBalance(work.kind);
  }
}

/** A balance row with what `billing_refusal` answers for a hold: what `assertBillableRow` judges. */
export interface BillableRow extends BalanceRow {
  refusal: string | null;
}

/** The columns of a `BillableRow` for a hold of `:hold` micro-dollars, read from `balances` as `b`. */
export const BILLABLE_COLUMNS = 'b.balance_micros, b.reserved_micros, billing_refusal(b.org_id, :hold) as refusal';

/** Throws what `reserve` would refuse a call holding `amountMicros` with, judged from its balance row (none: no organisation). */
export function assertBillableRow(row: BillableRow | undefined, orgId: string, amountMicros: bigint): void {
  if (!row) throw new QuorumError('not_found', `no organisation ${orgId}`);
  const refusal = asRefusal(row.refusal);
  if (refusal) throw billingRefusalError(refusal);
  if (toBalance(row).availableMicros < amountMicros) throw insufficientBalance('call');
}

/**
 * Throws what `reserve` would refuse a call holding `amountMicros` with, in one query. A read only: `reserve` stays
 * the authority (another call may take the money in between); this lets a refused call fail before it starts.
 */
export async function assertBillable(db: DbOrTrx, orgId: string, amountMicros: bigint): Promise<void> {
  const { rows } = await db.raw<{ rows: BillableRow[] }>(`select ${BILLABLE_COLUMNS} from balances b where b.org_id = :orgId`, {
    hold: amountMicros.toString(),
    orgId,
  });
  assertBillableRow(rows[0], orgId, amountMicros);
}

export async function createBalance(trx: Knex.Transaction, orgId: string): Promise<void> {
  await trx('balances').insert({ org_id: orgId });
}

/**
 * Holds `amountMicros` for a call, unless the balance or a billing state refuses it (see `postAdmitted`).
 * Idempotent per request id: one reservation per request id, ever, so a repeated call (a retried activity) changes
 * nothing; a new run after a release needs a new request id.
 */
export async function reserve(db: Knex, input: ReserveInput): Promise<void> {
  await unknownOrgAsNotFound(input.orgId, () => db.transaction((trx) => reserveIn(trx, input)));
}

export interface ReserveInput {
  orgId: string;
  requestId: string;
  amountMicros: bigint;
}

/** `reserve` as part of the caller's transaction, without a savepoint of its own: a refusal rolls back the caller's too. */
export async function reserveIn(trx: Knex.Transaction, input: ReserveInput): Promise<void> {
  requireNonNegative('amountMicros', input.amountMicros);
  const inserted = await trx('reservations')
    .insert({ org_id: input.orgId, request_id: input.requestId, amount_micros: input.amountMicros.toString(), state: 'held' })
    .onConflict(['org_id', 'request_id'])
    .ignore()
    .returning('request_id');
  if (inserted.length === 0) return;
  // A failure here rolls back the reservation row with it.
  await postAdmitted(
    trx,
    input.orgId,
    [{ kind: 'reservation', amountMicros: 0n, reservedDeltaMicros: input.amountMicros, requestId: input.requestId }],
    { kind: 'call', amountMicros: input.amountMicros },
  );
}

/** A call's hold judged against its live key's monthly budget as well as the balance. */
export interface KeyBudgetHold extends ReserveInput {
  keyId: string;
  budgetMicros: bigint;
}

/**
 * A call's hold on the balance, refused past its key's monthly budget (issue 41 item 3). The key's holds take turns
 * (a transaction lock on the key), so calls made at once on one key cannot all pass a check each made before any of
 * them held: each reads the month's spend with the holds before it in. A retried hold of a request already held
 * changes nothing. `held: false` with the key's figures writes nothing; a balance refusal throws as `reserveIn`'s.
 */
export async function holdWithinKeyBudget(
  db: Knex,
  input: KeyBudgetHold,
): Promise<{ held: true } | { held: false; figures: KeyBudgetFigures }> {
  return unknownOrgAsNotFound(input.orgId, () =>
    db.transaction(async (trx) => {
      await trx.raw(`select pg_advisory_xact_lock(hashtextextended('key_budget:' || ?, 0))`, [input.keyId]);
      const had = await trx('reservations').where({ org_id: input.orgId, request_id: input.requestId }).first('request_id');
      if (had) return { held: true };
      const spend = await keyMonthSpend(trx, { orgId: input.orgId, keyId: input.keyId, month: monthStartUtc() });
      const figures: KeyBudgetFigures = { budgetMicros: input.budgetMicros, ...spend };
      if (!fitsKeyBudget(figures, input.amountMicros)) return { held: false, figures };
      await reserveIn(trx, input);
      return { held: true };
    }),
  );
}

/**
 * A call's hold in one statement, outside a transaction: the balance row updated under the same conditions as
 * `reserveIn` (the balance covers it, no billing state refuses it), its ledger entry and its reservation row, only if
 * the request holds nothing yet. `held`: done; `exists`: the request's one reservation was made already (a retried
 * hold changes nothing, as `reserveIn`); `refused`: nothing written, and `reserveIn` names why (or holds, if money
 * was freed meanwhile). A new hold closes no trial commitment (those are holds and runs open at the expiry), so the
 * catch-up `postEntries` runs has nothing to do here.
 */
export async function holdAtOnce(db: Knex, input: ReserveInput): Promise<'held' | 'exists' | 'refused'> {
  requireNonNegative('amountMicros', input.amountMicros);
  const entries: NewLedgerEntry[] = [
    { kind: 'reservation', amountMicros: 0n, reservedDeltaMicros: input.amountMicros, requestId: input.requestId },
  ];
  const [ctes, bindings] = posting(input.orgId, entries, input.amountMicros, input);
  try {
    // `had` reads the statement's snapshot: whether a reservation existed before it.
    const text = `${ctes} select exists (select 1 from posted) as posted,
                                 exists (select 1 from reservations where org_id = :orgId and request_id = :holdId) as had`;
    const { rows } = await db.raw<{ rows: { posted: boolean; had: boolean }[] }>(text, bindings).options(preparedAs(text));
    return rows[0].posted ? 'held' : rows[0].had ? 'exists' : 'refused';
  } catch (err) {
    // The same hold made at once by another attempt (a retried activity still running): its row won the unique index.
    if (err instanceof Error && 'code' in err && err.code === UNIQUE_VIOLATION) return 'exists';
    throw err;
  }
}

interface ReservationRow {
  amount_micros: bigint;
  state: 'held' | 'settled' | 'released';
}

/**
 * Charges the actual cost and releases the hold, in one transaction. `capCreditMicros` (Form B) is credited back
 * in the same step. Idempotent by request id: a second call changes nothing and reports `alreadySettled`.
 * Without a held reservation the charge is taken only if the available balance covers it.
 */
export function settle(db: Knex, input: SettleInput): Promise<{ alreadySettled: boolean }> {
  return unknownOrgAsNotFound(input.orgId, () => db.transaction((trx) => settleIn(trx, input)));
}

export interface SettleInput {
  orgId: string;
  requestId: string;
  chargeMicros: bigint;
  capCreditMicros?: bigint;
  kind?: ChargeKind;
}

/** A settle's amounts, checked: what the reservation records as charged, and the entries for the held amount `held`. */
function settleAmounts(input: SettleInput): { charged: bigint; entries: (held: bigint) => NewLedgerEntry[] } {
  const cap = input.capCreditMicros ?? 0n;
  requireNonNegative('chargeMicros', input.chargeMicros);
  requireNonNegative('capCreditMicros', cap);
  if (cap > input.chargeMicros)
    throw new QuorumError('invalid_request', 'capCreditMicros exceeds chargeMicros', { param: 'capCreditMicros' });
  return {
    charged: input.chargeMicros - cap,
    entries: (held) => [
      ...(held > 0n ? [{ kind: 'release' as const, amountMicros: 0n, reservedDeltaMicros: -held, requestId: input.requestId }] : []),
      { kind: input.kind ?? 'charge', amountMicros: -input.chargeMicros, requestId: input.requestId },
      ...(cap > 0n ? [{ kind: 'cap_credit' as const, amountMicros: cap, requestId: input.requestId }] : []),
    ],
  };
}

/** `settle` as part of the caller's transaction (a settle that writes its receipt beside it), without a savepoint of its own. */
export async function settleIn(trx: Knex.Transaction, input: SettleInput): Promise<{ alreadySettled: boolean }> {
  const { charged, entries } = settleAmounts(input);
  // The held reservation (the usual case) marked settled, returning what it was, under its lock, in one round trip:
  // the sub-select locks the row and reads its latest state.
  const { rows: marked } = await trx.raw<{ rows: ReservationRow[] }>(
    `update reservations x set state = 'settled', charged_micros = :charged, updated_at = now()
       from (select amount_micros, state from reservations where org_id = :orgId and request_id = :requestId for update) was
      where x.org_id = :orgId and x.request_id = :requestId and was.state <> 'settled'
      returning was.amount_micros, was.state`,
    { charged: charged.toString(), orgId: input.orgId, requestId: input.requestId },
  );
  let row = marked[0];
  if (!row) {
    // None, or settled already: a settle with no prior reserve inserts one to lock and to record that it happened; the
    // no-op update on a conflict locks and returns the existing row.
    const { rows } = await trx.raw<{ rows: ReservationRow[] }>(
      `insert into reservations (org_id, request_id, amount_micros, state) values (?, ?, 0, 'held')
         on conflict (org_id, request_id) do update set state = reservations.state
         returning amount_micros, state`,
      [input.orgId, input.requestId],
    );
    row = rows[0];
    if (row.state === 'settled') return { alreadySettled: true };
  }
  await postOrThrow(trx, input.orgId, entries(row.state === 'held' ? row.amount_micros : 0n));
  if (!marked[0])
    await trx('reservations')
      .where({ org_id: input.orgId, request_id: input.requestId })
      .update({ state: 'settled', charged_micros: charged.toString(), updated_at: trx.fn.now() });
  return { alreadySettled: false };
}

/**
 * A held call's settle as common table expressions of the one statement that also writes its receipt
 * (`receipts.settleOutcome`): the usual settle in one round trip, with no transaction around it. `settle_ok` locks the
 * call's held reservation, then its balance row (`settleIn`'s order), and yields the held amount only when `settleIn`
 * would do nothing but release it, charge and credit: no trial commitment open (`trial_due_micros`), no `balance.low`
 * to raise, the balance covering the charge. The caller writes its receipt only where `guard` holds (`settle_ok` has
 * a row), and `writes` follow the receipt (`exists (select 1 from receipt)`): the reservation settled, the balance
 * posted and its entries appended as `postEntries` does. When `settle_ok` has no row nothing is written, and the
 * caller settles in a transaction (`settleIn`), which handles every case.
 */
export function settleAtOnce(q: Knex, input: SettleInput): { ok: [string, Knex.Raw][]; guard: string; writes: [string, Knex.Raw][] } {
  const { charged, entries } = settleAmounts(input);
  // The entries as `settleIn` would post them with some hold; the release's delta is the held amount, read in SQL.
  const posted = entries(1n);
  const balanceDelta = posted.reduce((sum, e) => sum + e.amountMicros, 0n).toString();
  const ids = { orgId: input.orgId, requestId: input.requestId };
  return {
    ok: [
      [
        'settle_held',
        q.raw(
          `select amount_micros from reservations where org_id = :orgId and request_id = :requestId and state = 'held' for update`,
          ids,
        ),
      ],
      [
        'settle_balance',
        q.raw(
          `select balance_micros, reserved_micros, low_balance_micros, low_alerted, trial_due_micros
             from balances where org_id = :orgId and exists (select 1 from settle_held) for update`,
          ids,
        ),
      ],
      [
        'settle_ok',
        q.raw(
          `select h.amount_micros as held from settle_held h, settle_balance b
            where b.trial_due_micros is null
              and b.reserved_micros - h.amount_micros >= 0
              and b.balance_micros + :bd >= b.reserved_micros - h.amount_micros
              and (b.low_alerted or b.balance_micros + :bd >= b.low_balance_micros)`,
          { bd: balanceDelta },
        ),
      ],
    ],
    guard: 'exists (select 1 from settle_ok)',
    writes: [
      [
        'settle_marked',
        q.raw(
          `update reservations set state = 'settled', charged_micros = :charged, updated_at = now()
            where org_id = :orgId and request_id = :requestId and exists (select 1 from receipt)`,
          { ...ids, charged: charged.toString() },
        ),
      ],
      [
        'settle_posted',
        q.raw(
          `update balances
              set balance_micros = balance_micros + :bd, reserved_micros = reserved_micros - (select held from settle_ok),
                  updated_at = now(), low_alerted = low_alerted and balance_micros + :bd < low_balance_micros
            where org_id = :orgId and exists (select 1 from receipt)
            returning 1`,
          { orgId: input.orgId, bd: balanceDelta },
        ),
      ],
      [
        'settle_appended',
        q.raw(
          `insert into ledger_entries (org_id, kind, amount_micros, reserved_delta_micros, request_id)
           select :orgId, e.kind, e.amount, case when e.kind = 'release' then -ok.held else 0 end, :requestId
             from settle_posted, settle_ok ok,
                  unnest(cast(:kinds as text[]), cast(:amounts as bigint[])) with ordinality as e(kind, amount, n)
            where e.kind <> 'release' or ok.held > 0
            order by e.n`,
          { ...ids, kinds: posted.map((e) => e.kind), amounts: posted.map((e) => e.amountMicros.toString()) },
        ),
      ],
    ],
  };
}

/** Gives a held reservation back (a failed or unbilled call). Idempotent; a no-op once settled or released. */
export async function release(db: DbOrTrx, input: { orgId: string; requestId: string }): Promise<void> {
  await db.transaction((trx) => releaseIn(trx, input));
}

/** `release` as part of the caller's transaction, without a savepoint of its own (two round trips fewer). */
export async function releaseIn(trx: Knex.Transaction, input: { orgId: string; requestId: string }): Promise<void> {
  const released = (await trx('reservations')
    .where({ org_id: input.orgId, request_id: input.requestId, state: 'held' })
    .update({ state: 'released', updated_at: trx.fn.now() })
    .returning('amount_micros')) as { amount_micros: bigint }[];
  const held = released[0]?.amount_micros;
  if (held === undefined) return;
  await postOrThrow(trx, input.orgId, [{ kind: 'release', amountMicros: 0n, reservedDeltaMicros: -held, requestId: input.requestId }]);
}

export async function topUp(db: DbOrTrx, input: { orgId: string; amountMicros: bigint; note?: string }): Promise<Balance> {
  if (input.amountMicros <= 0n) throw new QuorumError('invalid_request', 'a top-up must be positive', { param: 'amountMicros' });
  return db.transaction((trx) => postOrThrow(trx, input.orgId, [{ kind: 'top_up', amountMicros: input.amountMicros, note: input.note }]));
}

export async function getBalance(db: DbOrTrx, orgId: string): Promise<Balance> {
  const row = (await db('balances').where({ org_id: orgId }).first('balance_micros', 'reserved_micros')) as BalanceRow | undefined;
  if (!row) throw new QuorumError('not_found', `no organisation ${orgId}`);
  return toBalance(row);
}

/** Which of an organisation's entries a page lists (`GET /v1/ledger`): kinds, a time window, and entries before one. */
export interface LedgerFilter {
  kinds?: readonly LedgerKind[];
  /** Inclusive. */
  start?: Date;
  /** Exclusive. */
  end?: Date;
  /** Only entries older than this one (the last id of the page before). */
  beforeId?: string;
}

/** The organisation's most recent entries, newest first (those the filter admits). */
export async function listLedger(db: DbOrTrx, orgId: string, limit = 20, filter: LedgerFilter = {}): Promise<LedgerEntry[]> {
  const query = db('ledger_entries').where({ org_id: orgId });
  if (filter.kinds) query.whereIn('kind', filter.kinds);
  if (filter.start) query.where('created_at', '>=', filter.start);
  if (filter.end) query.where('created_at', '<', filter.end);
  if (filter.beforeId !== undefined) query.where('id', '<', filter.beforeId);
  const rows = (await query
    .orderBy('id', 'desc')
    .limit(limit)
    .select('id', 'kind', 'amount_micros', 'reserved_delta_micros', 'request_id', 'note', 'created_at')) as {
    id: bigint;
    kind: LedgerKind;
    amount_micros: bigint;
    reserved_delta_micros: bigint;
    request_id: string | null;
    note: string | null;
    created_at: Date;
  }[];
  return rows.map((r) => ({
    id: r.id.toString(),
    kind: r.kind,
    amountMicros: r.amount_micros,
    reservedDeltaMicros: r.reserved_delta_micros,
    requestId: r.request_id,
    note: r.note,
    createdAt: r.created_at,
  }));
}

/** Whether the organisation has a ledger entry of this id (a page's cursor). */
export async function hasLedgerEntry(db: DbOrTrx, orgId: string, id: string): Promise<boolean> {
  return (await db('ledger_entries').where({ org_id: orgId, id }).first('id')) !== undefined;
}

/** The cap credit (Form B's excess over a call's ceiling, credited back) the organisation received since `since`. */
export async function capCreditSince(db: DbOrTrx, orgId: string, since: Date): Promise<bigint> {
  const row = (await db('ledger_entries')
    .where({ org_id: orgId, kind: 'cap_credit' })
    .andWhere('created_at', '>=', since)
    .sum({ total: 'amount_micros' })
    .first()) as { total: string | null } | undefined;
  return BigInt(row?.total ?? 0);
}

export interface LedgerKindTotal {
  kind: LedgerKind;
  entries: number;
  amountMicros: bigint;
  reservedDeltaMicros: bigint;
}

/**
 * Every organisation's ledger summed by kind: the service's money at a glance (what `/metrics` exposes). One
 * aggregate over the ledger, so its caller caches it rather than running it per scrape.
 */
export async function ledgerTotals(db: DbOrTrx): Promise<LedgerKindTotal[]> {
  const rows = (await db('ledger_entries')
    .groupBy('kind')
    .orderBy('kind')
    .select('kind')
    .count({ entries: '*' })
    .sum({ amount: 'amount_micros', reserved: 'reserved_delta_micros' })) as {
    kind: LedgerKind;
    entries: bigint;
    amount: string;
    reserved: string;
  }[];
  // count() is int8 (a bigint through our parser); sum() of int8 is numeric, which pg hands over as a string.
  return rows.map((r) => ({
    kind: r.kind,
    entries: Number(r.entries),
    amountMicros: BigInt(r.amount),
    reservedDeltaMicros: BigInt(r.reserved),
  }));
}
