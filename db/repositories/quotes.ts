import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AuthenticatedKey } from './api-keys';
import { QuorumError } from '../../domain/errors';
import type { RunKind } from '../../domain/runs';
import type { DbOrTrx } from './shared';

/**
 * The advisor's quotes (spec 02 "Quote lifecycle"). An approval is claimed under the quote row's lock, so of two
 * approvals at once exactly one launches; the launch itself is idempotent by a key derived from the quote and its
 * attempt (`claimRequest`'s pattern), so a launch re-driven after a crash finds the run it already started.
 */

/** Who pays the quoted run: a live key's organisation, nobody (a test key's simulated run), or a connected app's plan. */
export type QuotePayer = 'organisation' | 'none' | 'plan';
export type QuoteState = 'issued' | 'approved' | 'launched' | 'expired';

/** Who pays a run this caller launches: a connected app's person's plan, nobody on a test key, else the organisation. */
export function payerOf(auth: Pick<AuthenticatedKey, 'keyKind' | 'app'>): { payer: QuotePayer; payerPersonId: string | null } {
  if (auth.app) return { payer: 'plan', payerPersonId: auth.app.personId };
  return { payer: auth.keyKind === 'test' ? 'none' : 'organisation', payerPersonId: null };
}

/** The run a quote prices, as a launch takes it (counts by bucket; the Form's names only at the edge). */
export interface QuotedRun {
  counts: { light: number; medium: number; hard: number };
  judges: string[];
  repeats: number;
  protocol: string;
  tiers: string[];
  punchUp: boolean;
}

export interface QuoteRecord {
  id: string;
  orgId: string;
  payer: QuotePayer;
  /** A plan-billed quote: the person whose plan it bills; else null. */
  payerPersonId: string | null;
  modeId: string;
  model: string;
  kind: RunKind;
  request: QuotedRun;
  seed: number;
  priceMicros: number;
  state: QuoteState;
  attempt: number;
  runId: string | null;
  createdAt: Date;
  expiresAt: Date;
  /** A dry run's quote (issue 38 item 8): the launch body's fingerprint and the mode version it priced; null: the advisor's. */
  fingerprint: string | null;
  modeVersion: number | null;
  /** Each question's price (a test run's), which the launch keeps on the run. */
  questionPrices: Record<string, number> | null;
}

interface QuoteRow {
  id: string;
  org_id: string;
  payer: QuotePayer;
  payer_person_id: string | null;
  mode_id: string;
  model: string;
  kind: RunKind;
  request: QuotedRun;
  seed: bigint | string;
  price_micros: bigint | string;
  state: QuoteState;
  attempt: number;
  run_id: string | null;
  created_at: Date;
  expires_at: Date;
  approved_at: Date | null;
  fingerprint: string | null;
  mode_version: number | null;
  question_prices: Record<string, number> | null;
}

const toRecord = (r: QuoteRow): QuoteRecord => ({
  id: r.id,
  orgId: r.org_id,
  payer: r.payer,
  payerPersonId: r.payer_person_id,
  modeId: r.mode_id,
  model: r.model,
  kind: r.kind,
  request: r.request,
  seed: Number(r.seed),
  priceMicros: Number(r.price_micros),
  state: r.state,
  attempt: r.attempt,
  runId: r.run_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  fingerprint: r.fingerprint,
  modeVersion: r.mode_version,
  questionPrices: r.question_prices,
});

export type NewQuote = Pick<
  QuoteRecord,
  'orgId' | 'payer' | 'payerPersonId' | 'modeId' | 'model' | 'kind' | 'request' | 'seed' | 'priceMicros'
> &
  Partial<Pick<QuoteRecord, 'fingerprint' | 'modeVersion' | 'questionPrices'>> & {
    apiKeyId: string | null;
    ttlSeconds: number;
  };

export async function insertQuote(db: DbOrTrx, q: NewQuote): Promise<QuoteRecord> {
  const [row] = (await db('advisor_quotes')
    .insert({
      id: randomUUID(),
      org_id: q.orgId,
      api_key_id: q.apiKeyId,
      payer: q.payer,
      payer_person_id: q.payerPersonId,
      mode_id: q.modeId,
      model: q.model,
      kind: q.kind,
      request: JSON.stringify(q.request),
      seed: q.seed,
      price_micros: String(q.priceMicros),
      fingerprint: q.fingerprint ?? null,
      mode_version: q.modeVersion ?? null,
      question_prices: q.questionPrices ? JSON.stringify(q.questionPrices) : null,
      expires_at: db.raw(`now() + make_interval(secs => ?)`, [q.ttlSeconds]),
    })
    .returning('*')) as QuoteRow[];
  return toRecord(row);
}

export type Claim =
  | { kind: 'not_found' }
  | { kind: 'expired'; quote: QuoteRecord }
  | { kind: 'used'; quote: QuoteRecord }
  | { kind: 'payer_mismatch'; quote: QuoteRecord }
  /** Another approval is launching it right now. */
  | { kind: 'in_flight'; quote: QuoteRecord }
  /** This approval launches it: `quote.runId` is the run to start. */
  | { kind: 'claimed'; quote: QuoteRecord };

/**
 * Decides an approval under the quote's row lock. An approval older than `staleAfterMs` that never finished (its
 * process died) is taken over with the same run id and attempt, so re-driving it finds whatever it had started.
 * A failed read is `quote_read_failed`; a failed write `approval_not_recorded` (nothing launched either way).
 */
export async function claimApproval(
  db: Knex,
  input: { id: string; orgId: string; payer: QuotePayer; payerPersonId: string | null; staleAfterMs: number },
): Promise<Claim> {
  let read = false;
  try {
    return await db.transaction(async (trx) => {
      const row = (await trx('advisor_quotes').where({ id: input.id }).forUpdate().first()) as QuoteRow | undefined;
      const now = (await trx.raw<{ rows: { now: Date }[] }>('select now()')).rows[0].now;
      read = true;
      // Another organisation's quote is never revealed.
      if (!row || row.org_id !== input.orgId) return { kind: 'not_found' as const };
      const quote = toRecord(row);
      if (row.state === 'launched') return { kind: 'used' as const, quote };
      if (row.state === 'expired') return { kind: 'expired' as const, quote };
      if (row.state === 'issued' && row.expires_at <= now) {
        await trx('advisor_quotes').where({ id: row.id }).update({ state: 'expired' });
        return { kind: 'expired' as const, quote: { ...quote, state: 'expired' as const } };
      }
      // A plan-billed quote is approved on the plan it bills: by the same person, through a connected app.
      if (row.payer !== input.payer || row.payer_person_id !== input.payerPersonId) return { kind: 'payer_mismatch' as const, quote };
      if (row.state === 'approved' && row.approved_at && now.getTime() - row.approved_at.getTime() < input.staleAfterMs)
        return { kind: 'in_flight' as const, quote };
      const runId = row.state === 'approved' && row.run_id ? row.run_id : randomUUID();
      await trx('advisor_quotes').where({ id: row.id }).update({ state: 'approved', approved_at: trx.fn.now(), run_id: runId });
      return { kind: 'claimed' as const, quote: { ...quote, state: 'approved' as const, runId } };
    });
  } catch (err) {
    if (err instanceof QuorumError) throw err;
    if (!read) throw new QuorumError('quote_read_failed', 'The quote could not be read; nothing was launched. Retry.');
    throw new QuorumError('approval_not_recorded', 'The approval could not be saved, so nothing was launched or charged. Retry.');
  }
}

/** The claimed launch started (or was found started): the quote is used. */
export async function markLaunched(db: DbOrTrx, id: string, runId: string): Promise<void> {
  await db('advisor_quotes').where({ id }).update({ state: 'launched', run_id: runId, launched_at: db.fn.now() });
}

/**
 * The claimed launch did not happen: the quote is open again. `failedAttempt` when a run was charged and credited
 * back under this attempt's key, so the next approval launches under a new one.
 */
export async function releaseApproval(db: DbOrTrx, id: string, failedAttempt: boolean): Promise<void> {
  await db('advisor_quotes')
    .where({ id, state: 'approved' })
    .update({ state: 'issued', run_id: null, approved_at: null, attempt: failedAttempt ? db.raw('attempt + 1') : db.raw('attempt') });
}

/**
 * A launch takes the newest unexpired dry-run quote of its body by its key (same organisation, API key, kind,
 * fingerprint and mode version: the key's ceiling and kind are in the price) and uses it up in one statement, so of two launches at once only one draws its questions (issue 38 item 8).
 */
export async function takeDryRunQuote(
  db: DbOrTrx,
  input: { orgId: string; apiKeyId: string; kind: RunKind; fingerprint: string; modeVersion: number },
): Promise<QuoteRecord | undefined> {
  const { orgId, apiKeyId, kind, fingerprint, modeVersion } = input;
  const newest = db('advisor_quotes')
    .where({ org_id: orgId, api_key_id: apiKeyId, kind, fingerprint, mode_version: modeVersion, state: 'issued' })
    .where('expires_at', '>', db.fn.now())
    .orderBy('created_at', 'desc')
    .limit(1)
    .forUpdate()
    .skipLocked()
    .select('id');
  const [row] = (await db('advisor_quotes')
    .whereIn('id', newest)
    .update({ state: 'launched', launched_at: db.fn.now() })
    .returning('*')) as QuoteRow[];
  return row && toRecord(row);
}

/** A launch that took a dry-run quote and started nothing gives it back, so the next launch of the body honours it. */
export async function returnDryRunQuote(db: DbOrTrx, id: string): Promise<void> {
  await db('advisor_quotes').where({ id, state: 'launched' }).update({ state: 'issued', launched_at: null });
}
