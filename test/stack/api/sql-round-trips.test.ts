import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createDb, type Db } from '../../../db/knex';
import { acquireLease, leasesInFlight } from '../../../db/repositories/limits';
import { upsertMode } from '../../../db/repositories/modes';
import { stack } from '../../harness/stack';
import { customMode, startProductWorkers } from '../deliberation/helpers';
import { systemModeConfig } from './fixtures';
import { call, EXPRESS, newKey, newOrg, PANEL, startApi, USER, type Api, type Reply } from './helpers';

/**
 * The SQL a deliberation costs (issues 31 and 42, DESIGN §13): a new key is claimed in one round trip — its row, the
 * balance and the claim in one statement —, held in one statement and settled in one. Every statement the API's
 * and the worker's pools send is recorded with knex's `query` event on the real Postgres, and counted here by the
 * tables it names.
 */
interface Sent {
  sql: string;
  tx?: string;
  /** The name it was prepared under, when sent as a named prepared statement. */
  prepared?: string;
}

function traced(into: Sent[]): Db {
  const db = createDb(stack().dbUrl, 4);
  db.on('query', (q: { sql: string; __knexTxId?: string; options?: { name?: string } }) =>
    into.push({ sql: q.sql.replace(/\s+/g, ' '), tx: q.__knexTxId, prepared: q.options?.name }),
  );
  return db;
}

/** A statement that reads or writes one of `tables` (quoted or not, as knex and hand-written SQL name them). */
const names = (sent: Sent, ...tables: string[]): boolean =>
  tables.some((t) => new RegExp(`\\b(from|into|update|join)\\s+"?${t}"?[\\s(]`, 'i').test(`${sent.sql} `));
const TX_CONTROL = /^(begin|commit|rollback)\b/i;

describe('SQL per call: one round trip to claim, one to hold, one to settle', function () {
  this.timeout(120_000);
  const apiSent: Sent[] = [];
  const workerSent: Sent[] = [];
  let apiDb: Db;
  let workerDb: Db;
  let workers: { stop(): Promise<void> };
  let api: Api;

  before(async () => {
    apiDb = traced(apiSent);
    workerDb = traced(workerSent);
    workers = await startProductWorkers({}, { ...stack(), nativeConnection: stack().env.nativeConnection, db: workerDb });
    api = await startApi('B', { db: apiDb });
  });
  after(async () => {
    await api.close();
    await workers.stop();
    await Promise.all([apiDb.destroy(), workerDb.destroy()]);
  });

  /** One completion's statements in each process (the API's lease release may trail its reply, and is not counted). */
  async function traceCall(key: string, body: unknown, idempotencyKey: string): Promise<{ status: number; api: Sent[]; worker: Sent[] }> {
    apiSent.length = 0;
    workerSent.length = 0;
    const reply = await call(api, 'POST', '/v1/chat/completions', { key, body, headers: { 'Idempotency-Key': idempotencyKey } });
    return { status: reply.status, api: [...apiSent], worker: [...workerSent] };
  }

  for (const [lane, model] of [
    ['express', EXPRESS.B],
    ['panel', PANEL.B],
  ] as const) {
    it(`${lane}: the claim, the hold and the settle are one statement each; a repeat reads one row and claims nothing`, async () => {
      const org = await newOrg(20);
      const key = await newKey(org.orgId);
      const body = { model, messages: USER(`Why is the sky blue? ${randomUUID()}`) };
      const idem = randomUUID();
      const first = await traceCall(key, body, idem);
      assert.equal(first.status, 200);

      // The API: the key's row, the balance and the claim are one statement, sent alone (no transaction around it).
      const claim = first.api.filter((s) => names(s, 'requests', 'balances'));
      assert.equal(claim.length, 1, `the claim's statements: ${claim.map((s) => s.sql.slice(0, 120)).join(' | ')}`);
      assert.match(claim[0].sql, /insert into requests/i);
      assert.equal(claim[0].tx, undefined);
      assert.ok(claim[0].prepared, 'the claim is a named prepared statement');
      const rows = await stack().db('requests').where({ org_id: org.orgId, idempotency_key: idem });
      assert.deepEqual(
        rows.map((r: { state: string }) => r.state),
        ['succeeded'],
      );

      // The worker: the receipt, its seats, the request's end, the reservation, the balance and its entries are one
      // statement, sent alone (Postgres commits it as one).
      const settle = first.worker.filter((s) => names(s, 'receipts', 'receipt_seats') || /update "?requests"?/i.test(s.sql));
      assert.equal(settle.length, 1, `the settle's statements: ${settle.map((s) => s.sql.slice(0, 120)).join(' | ')}`);
      assert.equal(settle[0].tx, undefined, 'no transaction around it');
      for (const table of ['receipts', 'receipt_seats', 'reservations', 'balances', 'ledger_entries'])
        assert.ok(names(settle[0], table), `the settle writes ${table}`);
      assert.deepEqual(
        first.worker.filter((s) => TX_CONTROL.test(s.sql)).map((s) => s.sql),
        [],
        'the worker opens no transaction',
      );
      // What it wrote: the hold released and the receipt's charge taken, by the ledger's own entries.
      const [receipt] = (await stack().db('receipts').where({ request_id: rows[0].id })) as { billed_micros: string }[];
      const entries = (await stack()
        .db('ledger_entries')
        .where({ org_id: org.orgId, request_id: rows[0].id })
        .orderBy('id')
        .select('kind', 'amount_micros', 'reserved_delta_micros')) as {
        kind: string;
        amount_micros: string;
        reserved_delta_micros: string;
      }[];
      const [held] = (await stack().db('reservations').where({ org_id: org.orgId })) as { amount_micros: string }[];
      assert.deepEqual(
        entries.map((e) => [e.kind, BigInt(e.amount_micros), BigInt(e.reserved_delta_micros)]),
        [
          ['reservation', 0n, BigInt(held.amount_micros)],
          ['release', 0n, -BigInt(held.amount_micros)],
          ['charge', -BigInt(receipt.billed_micros), 0n],
        ],
      );

      // The hold: the reservation, the balance and its entry in one statement, outside any transaction.
      const hold = first.worker.filter((s) => s !== settle[0] && names(s, 'reservations', 'balances', 'ledger_entries'));
      assert.equal(hold.length, 1, hold.map((s) => s.sql.slice(0, 120)).join(' | '));
      assert.equal(hold[0].tx, undefined);
      assert.ok(hold[0].prepared, 'the hold is a named prepared statement');
      const [reservation] = await stack().db('reservations').where({ org_id: org.orgId });
      assert.equal((reservation as { state: string }).state, 'settled');
      // A chat completion's steps are stored for no one (issue 42): no statement writes a step event.
      assert.deepEqual(
        first.worker.filter((s) => names(s, 'deliberation_events')).map((s) => s.sql.slice(0, 80)),
        [],
      );

      // The same key again: the stored answer, from the one statement that found the key's row (nothing claimed).
      const again = await traceCall(key, body, idem);
      assert.equal(again.status, 200);
      const replay = again.api.filter((s) => names(s, 'requests', 'balances'));
      assert.equal(replay.length, 1, replay.map((s) => s.sql.slice(0, 120)).join(' | '));
      assert.equal(again.worker.filter((s) => !TX_CONTROL.test(s.sql)).length, 0, 'a replay runs nothing');
      assert.equal((await stack().db('requests').where({ org_id: org.orgId, idempotency_key: idem })).length, 1);
    });
  }

  it('402: the balance refuses in the same one statement, and no request row is left', async () => {
    const org = await newOrg(0);
    // The trial's $5 is all it holds; this key's ceiling is $50, so the hold cannot be covered.
    const key = await newKey(org.orgId, { limits: { maxCostMicros: 50_000_000n } });
    const idem = randomUUID();
    const refused = await traceCall(key, { model: PANEL.B, messages: USER('Why is the sky blue?') }, idem);
    assert.equal(refused.status, 402);
    assert.equal(refused.api.filter((s) => names(s, 'requests', 'balances')).length, 1);
    assert.equal(refused.worker.length, 0, 'nothing ran');
    assert.equal((await stack().db('requests').where({ org_id: org.orgId })).length, 0);
  });

  /** One estimate's statements in the API, each named by what it does (the gate's, the mode, the estimate's own). */
  async function traceEstimate(
    key: string,
    model: string,
  ): Promise<{ status: number; code?: string; requestId?: unknown; steps: string[]; sent: Sent[]; body: Reply['body'] }> {
    apiSent.length = 0;
    const reply = await call(api, 'POST', '/v1/estimate', { key, body: { model, messages: USER(`Why is the sky blue? ${randomUUID()}`) } });
    const sent = [...apiSent];
    const step = (s: Sent): string =>
      names(s, 'api_keys') && /admit_request\(/.test(s.sql)
        ? 'key and rate'
        : names(s, 'modes')
          ? 'mode'
          : names(s, 'estimate_requests')
            ? 'admission'
            : names(s, 'concurrency_leases')
              ? 'release'
              : names(s, 'refused_requests')
                ? 'refusal'
                : s.sql.slice(0, 80);
    return {
      status: reply.status,
      code: reply.body.error?.code,
      requestId: reply.body.request_id,
      steps: sent.map(step),
      sent,
      body: reply.body,
    };
  }

  it('a mode is read once per catalogue revision: a release, or any change to the mode, is read by the next call', async () => {
    const org = await newOrg(20);
    const key = await newKey(org.orgId, { limits: { requestsPerMinute: 1_000 } });
    const base = systemModeConfig();
    const mode = await customMode(org.orgId, 'quorum-panel', {});
    const price = (r: Awaited<ReturnType<typeof traceEstimate>>): number => {
      assert.equal(r.status, 200);
      return Number(r.body.estimated_price_usd);
    };
    const first = await traceEstimate(key, mode.ticker);
    assert.ok(first.steps.includes('mode'), first.steps.join(', '));
    const cached = await traceEstimate(key, mode.ticker);
    assert.deepEqual(cached.steps, ['key and rate', 'admission']);

    // A release with a mode fee ten times the first: the next estimate reads the mode and prices the new version.
    await upsertMode(stack().db, {
      ...mode,
      config: { ...base, fees: { ...base.fees, perMtokInputUsd: base.fees.perMtokInputUsd * 10 } },
    });
    const released = await traceEstimate(key, mode.ticker);
    assert.ok(released.steps.includes('mode'), released.steps.join(', '));
    assert.ok(price(released) > price(first), `${price(released)} after the release, ${price(first)} before`);

    // Any write to the mode moves the revision, even one no repository made.
    await stack().db('modes').where({ id: mode.id }).update({ published: false });
    const unpublished = await traceEstimate(key, mode.ticker);
    assert.deepEqual([unpublished.status, unpublished.code], [403, 'mode_not_published']);
    assert.ok(unpublished.steps.includes('mode'), unpublished.steps.join(', '));
  });

  it('an estimate: the key with its rate in one statement, the mode, then one statement takes the slot, records it and reads the rates and own keys', async () => {
    const org = await newOrg(20);
    const key = await newKey(org.orgId, { limits: { concurrency: 2, requestsPerMinute: 1_000 } });
    const estimates = async (): Promise<number> => (await stack().db('estimate_requests').where({ org_id: org.orgId })).length;
    // The first estimate of a mode in this process also reads its newest run (cached 30 s): not the steady state.
    assert.equal((await traceEstimate(key, PANEL.B)).status, 200);

    // The heuristic classifies in process: a free slot admits it, and no lease is taken or released. The first estimate
    // found the mode at this catalogue revision: it is not read again.
    const heuristic = await traceEstimate(key, PANEL.B);
    assert.equal(heuristic.status, 200);
    assert.deepEqual(heuristic.steps, ['key and rate', 'admission']);
    assert.deepEqual(
      heuristic.sent.map((s) => s.tx),
      [undefined, undefined],
      'no transaction: each statement commits alone',
    );
    assert.ok(
      heuristic.sent.every((s) => s.prepared),
      'both sent as named prepared statements: parsed and planned once per connection',
    );
    const [admission] = heuristic.sent.filter((s) => names(s, 'estimate_requests'));
    for (const table of ['concurrency_leases', 'mode_call_stats', 'provider_credentials'])
      assert.ok(names(admission, table), admission.sql);
    assert.equal((await stack().db('estimate_requests').where({ id: heuristic.requestId, org_id: org.orgId })).length, 1);

    // A classifier model is waited on holding a lease, released before the answer.
    const panel = systemModeConfig();
    const classified = await customMode(org.orgId, 'quorum-panel', {
      staff: { ...panel.staff, classifier: { engine: 'sim/alpha-experience' } },
    });
    assert.equal((await traceEstimate(key, classified.ticker)).status, 200);
    const byModel = await traceEstimate(key, classified.ticker);
    assert.equal(byModel.status, 200);
    assert.deepEqual(byModel.steps, ['key and rate', 'admission', 'release']);
    assert.match(byModel.sent[1].sql, /acquire_concurrency_lease\(/);
    assert.equal(await leasesInFlight(stack().db, org.orgId), 0);

    // Every slot taken: the same one statement refuses and writes nothing; the gate records the refusal.
    const recorded = await estimates();
    const held = [await acquireLease(stack().db, org.orgId, 2), await acquireLease(stack().db, org.orgId, 2)];
    assert.ok(held.every(Boolean));
    // The system mode is read again once: the custom mode's creation moved the catalogue's revision.
    for (const [model, steps] of [
      [PANEL.B, ['key and rate', 'mode', 'admission', 'refusal']],
      [classified.ticker, ['key and rate', 'admission', 'refusal']],
    ] as const) {
      const refused = await traceEstimate(key, model);
      assert.deepEqual([refused.status, refused.code], [429, 'concurrency_limit_exceeded']);
      assert.deepEqual(refused.steps, steps);
    }
    assert.equal(await estimates(), recorded);
    assert.equal(await leasesInFlight(stack().db, org.orgId), 2);
  });
});
