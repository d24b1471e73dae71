import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import OpenAI from 'openai';
import { z } from 'zod';
import { createApiKey } from '../../../db/repositories/api-keys';
import type { Form } from '../../../domain/form';
import { stack } from '../../harness/stack';
import { startProductWorkers } from '../deliberation/helpers';
import { Visitor } from '../console/helpers';
import { BalanceSchema, LedgerListSchema, ReceiptListSchema, UsagePageSchema } from '../../../api/v1/account-resources';
import { call, EXPRESS, FORMS, newOrg, PANEL, startApi, USER, type Api, type TestOrg } from './helpers';

/**
 * Issue 41 items 1 and 2 through HTTP, in both Forms: an organisation makes a known set of calls (express and panel,
 * two keys, different `user` and `metadata`, on Form B one over its ceiling); then `GET /v1/usage` must equal the
 * sums the test computes from those calls' receipts and, independently, from the ledger rows it reads from Postgres;
 * `GET /v1/receipts` and `GET /v1/ledger` page through everything once, filter, and export as JSON Lines and CSV that
 * say what the JSON says; `GET /v1/balance` is the ledger's sum; bad input is 400 naming the parameter, and another
 * organisation sees none of it.
 */

type Obj = Record<string, unknown>;
const micros = (usd: unknown): number => Math.round(Number(usd) * 1_000_000);
const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

interface Made {
  requestId: string;
  keyId: string;
  model: string;
  user?: string;
  metadata?: Record<string, string>;
  /** `GET /v1/receipts/{id}`'s body. */
  body: Obj;
  receipt: Obj;
}

/** What one call's receipt says it cost, in this Form's names. */
function figures(form: Form, r: Obj): { engineAndPlatform: number; modeFee: number; capCredit: number; billed: number } {
  if (form === 'A')
    return {
      engineAndPlatform: micros(r.token_charge_usd),
      modeFee: micros(r.q_surcharge_usd),
      capCredit: 0,
      billed: micros(r.billed_usd),
    };
  const c = r.charges as Obj;
  return {
    engineAndPlatform: micros(c.gateway_usd) + micros(c.platform_fee_usd),
    modeFee: micros(c.mode_fee_usd),
    capCredit: micros(r.cap_credit_usd),
    billed: micros(r.billed_usd),
  };
}

/** A usage result's figures in micro-dollars and tokens. */
function resultFigures(r: Obj): number[] {
  return [
    Number(r.calls),
    Number(r.input_tokens),
    Number(r.output_tokens),
    micros(r.engine_cost_usd) + micros(r.platform_fee_usd),
    micros(r.mode_fee_usd),
    micros(r.cap_credit_usd),
    micros(r.billed_usd),
  ];
}

/** The same figures summed from the calls' own receipts. */
function expectedFigures(form: Form, calls: readonly Made[]): number[] {
  const f = calls.map((c) => figures(form, c.receipt));
  return [
    calls.length,
    sum(calls.map((c) => Number(c.receipt.prompt_tokens))),
    sum(calls.map((c) => Number(c.receipt.completion_tokens))),
    sum(f.map((x) => x.engineAndPlatform)),
    sum(f.map((x) => x.modeFee)),
    sum(f.map((x) => x.capCredit)),
    sum(f.map((x) => x.billed)),
  ];
}

const addUp = (rows: number[][]): number[] => rows.reduce((a, b) => a.map((v, i) => v + b[i]), [0, 0, 0, 0, 0, 0, 0]);

async function makeCall(
  api: Api,
  key: { key: string; id: string },
  c: { model: string; user?: string; metadata?: Record<string, string>; svc?: Obj },
): Promise<Made> {
  const reply = await call(api, 'POST', '/v1/chat/completions', {
    key: key.key,
    body: {
      model: c.model,
      messages: USER(`Name a prime number and say why. ${randomUUID()}`),
      user: c.user,
      metadata: c.metadata,
      svc: c.svc,
    },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const requestId = String(reply.body.svc?.request_id);
  const got = await call(api, 'GET', `/v1/receipts/${requestId}`, { key: key.key });
  assert.equal(got.status, 200, JSON.stringify(got.body));
  return { requestId, keyId: key.id, model: c.model, user: c.user, metadata: c.metadata, body: got.body, receipt: got.body.receipt as Obj };
}

/** Every page of a list, following `last_id`. */
async function allPages(api: Api, key: string, path: string, limit: number): Promise<Obj[]> {
  const out: Obj[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const sep = path.includes('?') ? '&' : '?';
    const reply = await call(api, 'GET', `${path}${sep}limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}`, { key });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const data = reply.body.data as Obj[];
    assert.ok(data.length <= limit);
    out.push(...data);
    if (!reply.body.has_more) return out;
    after = String(reply.body.last_id);
  }
  throw new Error('more than 50 pages');
}

async function getText(api: Api, key: string, path: string): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(api.url + path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

describe('usage, balance, the calls and the ledger by API (issue 41 items 1 and 2)', function () {
  this.timeout(600_000);
  let workers: { stop(): Promise<void> };
  before(async () => {
    workers = await startProductWorkers();
  });
  after(() => workers.stop());

  for (const form of FORMS) {
    describe(`Form ${form}`, () => {
      let api: Api;
      let org: TestOrg;
      let other: TestOrg;
      let keys: { key: string; id: string }[];
      let otherKey: { key: string; id: string };
      let calls: Made[];
      let otherCall: Made;
      let window: { start: number; end: number };

      const liveKey = async (orgId: string): Promise<{ key: string; id: string }> => {
        const k = await createApiKey(stack().db, { orgId, keyKind: 'live', limits: { requestsPerMinute: 10_000 } });
        return { key: k.apiKey, id: k.keyId };
      };

      before(async () => {
        api = await startApi(form);
        org = await newOrg(50);
        other = await newOrg(50);
        keys = [await liveKey(org.orgId), await liveKey(org.orgId)];
        otherKey = await liveKey(other.orgId);
        const start = Math.floor(Date.now() / 1000);
        calls = [
          await makeCall(api, keys[0], { model: EXPRESS[form], user: 'u-1', metadata: { project: 'atlas' } }),
          await makeCall(api, keys[0], { model: PANEL[form], user: 'u-2', metadata: { project: 'atlas', team: 'red' } }),
          await makeCall(api, keys[1], { model: PANEL[form], user: 'u-1', metadata: { project: 'zephyr' } }),
          await makeCall(api, keys[1], { model: EXPRESS[form] }),
        ];
        // Form B: a ceiling far below the call's cost, so the ledger credits the excess back (cap credit).
        if (form === 'B') calls.push(await makeCall(api, keys[0], { model: PANEL[form], user: 'u-2', svc: { max_cost_usd: 0.00001 } }));
        otherCall = await makeCall(api, otherKey, { model: EXPRESS[form], user: 'u-1', metadata: { project: 'atlas' } });
        window = { start, end: Math.floor(Date.now() / 1000) + 2 };
      });
      after(() => api.close());

      const usage = async (query: string, key = keys[0].key): Promise<z.infer<typeof UsagePageSchema>> => {
        const reply = await call(api, 'GET', `/v1/usage?start_time=${window.start}&end_time=${window.end}&${query}`, { key });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        return UsagePageSchema.parse(reply.body);
      };

      it('usage equals the sums of the calls’ receipts and of the ledger’s rows in Postgres, to the micro-dollar', async () => {
        if (form === 'B') assert.ok(figures(form, calls[4].receipt).capCredit > 0, 'the capped call was credited back');
        const page = await usage('bucket_width=1d');
        const results = page.data.flatMap((b) => b.results);
        for (const r of results)
          for (const k of ['mode', 'api_key_id', 'tier', 'lane', 'user', 'metadata'] as const) assert.equal(r[k], null);
        const total = addUp(results.map(resultFigures));
        assert.deepEqual(total, expectedFigures(form, calls));

        // The ledger, read straight from Postgres: the window's charge and cap-credit entries.
        const rows = (await stack()
          .db('ledger_entries')
          .where({ org_id: org.orgId })
          .whereIn('kind', ['charge', 'cap_credit'])
          .where('created_at', '>=', new Date(window.start * 1000))
          .where('created_at', '<', new Date(window.end * 1000))
          .select('kind', 'amount_micros')) as { kind: string; amount_micros: bigint }[];
        const charged = -sum(rows.filter((r) => r.kind === 'charge').map((r) => Number(r.amount_micros)));
        const credited = sum(rows.filter((r) => r.kind === 'cap_credit').map((r) => Number(r.amount_micros)));
        assert.equal(rows.filter((r) => r.kind === 'charge').length, calls.length, 'one charge per call');
        assert.equal(total[6], charged - credited, 'billed is what the ledger took');
        assert.equal(total[5], credited, 'cap credit is what the ledger credited');
        // No call reached Form A's ceiling: each was charged its parts in full.
        assert.equal(total[3] + total[4], charged, 'the parts are the charges');
      });

      it('group_by mode, key, tier, lane, user and a metadata key: each group is the sum of its own calls', async () => {
        const tiers = new Map(
          (
            (await stack()
              .db('receipts')
              .whereIn(
                'request_id',
                calls.map((c) => c.requestId),
              )
              .select('request_id', 'tier')) as { request_id: string; tier: string }[]
          ).map((r) => [r.request_id, r.tier]),
        );
        const groupOf = (c: Made): string =>
          JSON.stringify([
            c.model,
            c.keyId,
            tiers.get(c.requestId),
            c.receipt.lane,
            c.user ?? null,
            { project: c.metadata?.project ?? null },
          ]);
        const page = await usage('bucket_width=1h&group_by=mode,key,tier,lane&group_by=user&group_by=metadata.project');
        // The calls may straddle an hour: a group's figures are summed over the buckets.
        const got = new Map<string, number[]>();
        for (const b of page.data) {
          assert.equal(b.start_time % 3600 === 0 || b.start_time === window.start, true);
          for (const r of b.results) {
            const k = JSON.stringify([r.mode, r.api_key_id, r.tier, r.lane, r.user, r.metadata]);
            got.set(k, addUp([got.get(k) ?? [0, 0, 0, 0, 0, 0, 0], resultFigures(r)]));
          }
        }
        const want = new Map<string, number[]>();
        for (const c of calls) want.set(groupOf(c), addUp([want.get(groupOf(c)) ?? [0, 0, 0, 0, 0, 0, 0], expectedFigures(form, [c])]));
        assert.deepEqual(Object.fromEntries(got), Object.fromEntries(want));
      });

      it('group_by[] and the api_key_ids / models filters as openai-node sends them: each the sum of the receipts of the calls they name (issue 53 item 5)', async () => {
        // The official SDK's own query encoding (`group_by[]=mode&group_by[]=key`, `models[]=…`), not one written here.
        const sdk = new OpenAI({ baseURL: `${api.url}/v1`, apiKey: keys[0].key, maxRetries: 0 });
        const sdkUsage = async (query: Record<string, unknown>): Promise<z.infer<typeof UsagePageSchema>> =>
          UsagePageSchema.parse(await sdk.get('/usage', { query: { start_time: window.start, end_time: window.end, ...query } }));
        const results = (page: z.infer<typeof UsagePageSchema>): Obj[] => page.data.flatMap((b) => b.results);
        const totalOf = (page: z.infer<typeof UsagePageSchema>): number[] => addUp(results(page).map(resultFigures));
        const none = [0, 0, 0, 0, 0, 0, 0];

        // group_by[]: one group per mode and key, each the sum of its own calls' receipts.
        const grouped = await sdkUsage({ group_by: ['mode', 'key'] });
        const got = new Map<string, number[]>();
        for (const r of results(grouped)) {
          const k = JSON.stringify([r.mode, r.api_key_id]);
          got.set(k, addUp([got.get(k) ?? none, resultFigures(r)]));
        }
        const want = new Map<string, number[]>();
        for (const c of calls) {
          const k = JSON.stringify([c.model, c.keyId]);
          want.set(k, addUp([want.get(k) ?? none, expectedFigures(form, [c])]));
        }
        assert.deepEqual(Object.fromEntries(got), Object.fromEntries(want));
        assert.deepEqual(grouped, await usage('bucket_width=1d&group_by=mode,key'), 'the same page as the plain syntax');

        // Filters: the figures of exactly the calls named, however they are spelt.
        const of = (pick: (c: Made) => boolean): number[] => expectedFigures(form, calls.filter(pick));
        const [k0, k1] = keys.map((k) => k.id);
        const cases: [Record<string, unknown>, number[]][] = [
          [{ api_key_ids: [k1] }, of((c) => c.keyId === k1)],
          [{ api_key_ids: [k0, k1] }, of(() => true)],
          [{ models: [PANEL[form]] }, of((c) => c.model === PANEL[form])],
          [{ models: [EXPRESS[form], PANEL[form]] }, of(() => true)],
          [{ models: [EXPRESS[form]], api_key_ids: [k0] }, of((c) => c.model === EXPRESS[form] && c.keyId === k0)],
          // Ids of nothing here match nothing: another organisation's key, no key, the other Form's name of a mode.
          [{ api_key_ids: [otherKey.id] }, none],
          [{ api_key_ids: ['key_nobody'] }, none],
          [{ models: [PANEL[form === 'A' ? 'B' : 'A']] }, none],
        ];
        for (const [query, figures] of cases) {
          const page = await sdkUsage(query);
          assert.deepEqual(totalOf(page), figures, JSON.stringify(query));
          if (figures[0] === 0) assert.equal(results(page).length, 0, 'no group of no call');
        }
        // A filter with group_by[]: only the named key's groups.
        const filtered = results(await sdkUsage({ api_key_ids: [k1], group_by: ['key', 'mode'] }));
        assert.ok(filtered.length > 0 && filtered.every((r) => r.api_key_id === k1));
        // The plain spellings say the same as the SDK's.
        assert.deepEqual(
          totalOf(await usage(`api_key_ids=${k1}&models=${encodeURIComponent(PANEL[form])}`)),
          of((c) => c.keyId === k1 && c.model === PANEL[form]),
        );
        assert.deepEqual(
          totalOf(await usage(`api_key_ids=${k0},${k1}`)),
          of(() => true),
        );
      });

      it('usage pages its buckets: the pages together are the window once', async () => {
        const longStart = window.start - 5 * 86_400;
        const first = await call(api, 'GET', `/v1/usage?start_time=${longStart}&end_time=${window.end}&bucket_width=1d&limit=2`, {
          key: keys[0].key,
        });
        assert.equal(first.status, 200, JSON.stringify(first.body));
        const buckets: { start_time: number; end_time: number; results: Obj[] }[] = [];
        let page = UsagePageSchema.parse(first.body);
        for (;;) {
          assert.ok(page.data.length <= 2);
          buckets.push(...page.data);
          if (!page.next_page) break;
          const next = await call(
            api,
            'GET',
            `/v1/usage?start_time=${longStart}&end_time=${window.end}&bucket_width=1d&limit=2&page=${page.next_page}`,
            { key: keys[0].key },
          );
          assert.equal(next.status, 200, JSON.stringify(next.body));
          page = UsagePageSchema.parse(next.body);
        }
        assert.equal(buckets[0].start_time, longStart);
        assert.equal(buckets.at(-1)?.end_time, window.end);
        for (let i = 1; i < buckets.length; i++) assert.equal(buckets[i].start_time, buckets[i - 1].end_time, 'no gap, no overlap');
        assert.equal(sum(buckets.map((b) => sum(b.results.map((r) => Number(r.calls))))), calls.length);
      });

      it('the calls page through once, newest first, each as GET /v1/receipts/{id} says it', async () => {
        const listed = ReceiptListSchema.parse({
          object: 'list',
          data: await allPages(api, keys[0].key, '/v1/receipts', 2),
          first_id: null,
          last_id: null,
          has_more: false,
        }).data as Obj[];
        const ids = listed.map((e) => String(e.request_id));
        assert.deepEqual(ids, calls.map((c) => c.requestId).reverse(), 'every call once, newest first');
        for (const entry of listed) {
          const made = calls.find((c) => c.requestId === entry.request_id);
          const { object, request_id, status, ...body } = entry;
          assert.deepEqual([object, request_id, status], ['receipt', made?.requestId, made?.receipt.status]);
          assert.deepEqual(body, made?.body);
        }
      });

      it('the calls filter by mode, key, status, lane, time and metadata', async () => {
        const list = async (query: string): Promise<string[]> =>
          (await allPages(api, keys[0].key, `/v1/receipts?${query}`, 100)).map((e) => String(e.request_id));
        const ids = (pick: (c: Made) => boolean): string[] =>
          calls
            .filter(pick)
            .map((c) => c.requestId)
            .reverse();
        assert.deepEqual(
          await list(`mode=${encodeURIComponent(EXPRESS[form])}`),
          ids((c) => c.model === EXPRESS[form]),
        );
        assert.deepEqual(
          await list(`key=${keys[1].id}`),
          ids((c) => c.keyId === keys[1].id),
        );
        assert.deepEqual(
          await list('metadata[project]=atlas'),
          ids((c) => c.metadata?.project === 'atlas'),
        );
        assert.deepEqual(await list('metadata[project]=atlas&metadata[team]=red'), [calls[1].requestId]);
        assert.deepEqual(
          await list('lane=express'),
          ids((c) => c.receipt.lane === 'express'),
        );
        assert.deepEqual(
          await list('status=capped'),
          ids((c) => c.receipt.status === 'capped'),
        );
        assert.deepEqual(await list(`start_time=${window.end}`), []);
        assert.deepEqual(
          await list(`start_time=${window.start}&end_time=${window.end}`),
          ids(() => true),
        );
      });

      it('the ledger pages through once, as Postgres holds it, and filters by kind', async () => {
        const entries = LedgerListSchema.parse({
          object: 'list',
          data: await allPages(api, keys[0].key, '/v1/ledger', 3),
          first_id: null,
          last_id: null,
          has_more: false,
        }).data as Obj[];
        const rows = (await stack()
          .db('ledger_entries')
          .where({ org_id: org.orgId })
          .orderBy('id', 'desc')
          .select('id', 'kind', 'amount_micros', 'reserved_delta_micros', 'request_id')) as {
          id: bigint;
          kind: string;
          amount_micros: bigint;
          reserved_delta_micros: bigint;
          request_id: string | null;
        }[];
        assert.deepEqual(
          entries.map((e) => [e.id, e.kind, micros(e.amount_usd), micros(e.held_delta_usd), e.request_id]),
          rows.map((r) => [String(r.id), r.kind, Number(r.amount_micros), Number(r.reserved_delta_micros), r.request_id]),
        );
        const charges = await allPages(api, keys[0].key, '/v1/ledger?kind=charge,cap_credit', 100);
        assert.deepEqual(
          charges.map((e) => e.id),
          rows.filter((r) => r.kind === 'charge' || r.kind === 'cap_credit').map((r) => String(r.id)),
        );
      });

      it('both lists export as JSON Lines and CSV that say what the JSON says', async () => {
        const receipts = await allPages(api, keys[0].key, '/v1/receipts', 100);
        const jsonl = await getText(api, keys[0].key, '/v1/receipts?format=jsonl');
        assert.equal(jsonl.status, 200);
        assert.match(jsonl.type, /application\/x-ndjson/);
        assert.deepEqual(
          jsonl.text
            .trimEnd()
            .split('\n')
            .map((l) => JSON.parse(l) as Obj),
          receipts,
        );
        const csv = await getText(api, keys[0].key, '/v1/receipts?format=csv');
        assert.equal(csv.status, 200);
        assert.match(csv.type, /text\/csv/);
        const rows = parse(csv.text, { columns: true }) as Record<string, string>[];
        assert.deepEqual(
          rows.map((r) => r.request_id),
          receipts.map((e) => e.request_id),
        );
        for (const [i, row] of rows.entries()) {
          const r = receipts[i].receipt as Obj;
          assert.deepEqual(
            [row.status, Number(row.billed_usd), Number(row.prompt_tokens), row.lane, row.user, row.metadata],
            [r.status, r.billed_usd, r.prompt_tokens, r.lane, r.user ?? '', r.metadata ? JSON.stringify(r.metadata) : ''],
          );
          if (form === 'B')
            assert.deepEqual(
              [Number(row['charges.mode_fee_usd']), Number(row.cap_credit_usd)],
              [(r.charges as Obj).mode_fee_usd, r.cap_credit_usd],
            );
        }
        const ledger = await allPages(api, keys[0].key, '/v1/ledger', 100);
        const ledgerLines = await getText(api, keys[0].key, '/v1/ledger?format=jsonl');
        assert.deepEqual(
          ledgerLines.text
            .trimEnd()
            .split('\n')
            .map((l) => JSON.parse(l) as Obj),
          ledger,
        );
        const ledgerCsv = parse((await getText(api, keys[0].key, '/v1/ledger?format=csv')).text, { columns: true }) as Record<
          string,
          string
        >[];
        assert.deepEqual(
          ledgerCsv.map((r) => [r.id, r.kind, Number(r.amount_usd), Number(r.created_at), r.request_id]),
          ledger.map((e) => [e.id, e.kind, e.amount_usd, e.created_at, e.request_id ?? '']),
        );
      });

      it('the balance is the ledger’s sum, and the trial credit what spending left of it', async () => {
        const reply = await call(api, 'GET', '/v1/balance', { key: keys[1].key });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        const b = BalanceSchema.parse(reply.body);
        const rows = (await stack()
          .db('ledger_entries')
          .where({ org_id: org.orgId })
          .select('kind', 'amount_micros', 'reserved_delta_micros')) as {
          kind: string;
          amount_micros: bigint;
          reserved_delta_micros: bigint;
        }[];
        const balance = sum(rows.map((r) => Number(r.amount_micros)));
        const held = sum(rows.map((r) => Number(r.reserved_delta_micros)));
        assert.deepEqual([micros(b.balance_usd), micros(b.held_usd), micros(b.available_usd)], [balance, held, balance - held]);
        const spent = -sum(rows.filter((r) => ['charge', 'cap_credit'].includes(r.kind)).map((r) => Number(r.amount_micros)));
        assert.equal(micros(b.trial.credit_usd), 5_000_000);
        assert.equal(micros(b.trial.unused_usd), Math.max(0, 5_000_000 - spent));
        assert.equal(b.trial.expires_at - b.trial.started_at, 30 * 86_400);
        assert.equal(b.trial.expired_at, null);
      });

      it('the console’s overview shows the trial credit /v1/balance reads', async () => {
        const visitor = new Visitor(api);
        const name = `Trial ${randomUUID().slice(0, 8)}`;
        await visitor.signUp({ email: `t-${randomUUID().slice(0, 8)}@example.com`, password: 'correct horse battery staple', org: name });
        const { id } = (await stack().db('organisations').where({ name }).first('id')) as { id: string };
        const key = await liveKey(id);
        await makeCall(api, key, { model: EXPRESS[form] });
        const b = BalanceSchema.parse((await call(api, 'GET', '/v1/balance', { key: key.key })).body);
        assert.ok(b.trial.unused_usd > 0 && b.trial.unused_usd < 5, 'the call came out of the trial credit');
        const card = /id="trial-unused">\$([\d.]+)</.exec((await visitor.get('/console/overview')).body);
        assert.equal(card?.[1], b.trial.unused_usd.toFixed(4));
      });

      it('another organisation sees none of it, and its cursors are 404', async () => {
        const theirs = await allPages(api, otherKey.key, '/v1/receipts', 100);
        assert.deepEqual(
          theirs.map((e) => e.request_id),
          [otherCall.requestId],
        );
        const page = await usage('bucket_width=1d', otherKey.key);
        assert.equal(sum(page.data.flatMap((b) => b.results.map((r) => r.calls))), 1);
        const ledger = await allPages(api, otherKey.key, '/v1/ledger', 100);
        const mine = await allPages(api, keys[0].key, '/v1/ledger', 100);
        assert.equal(ledger.filter((e) => mine.some((m) => m.id === e.id)).length, 0);
        for (const path of [
          `/v1/receipts?after=${calls[0].requestId}`,
          `/v1/ledger?after=${String(mine[0].id)}`,
          `/v1/receipts/${calls[0].requestId}`,
        ]) {
          const reply = await call(api, 'GET', path, { key: otherKey.key });
          assert.equal(reply.status, 404, `${path}: ${JSON.stringify(reply.body)}`);
        }
        const balance = BalanceSchema.parse((await call(api, 'GET', '/v1/balance', { key: otherKey.key })).body);
        const theirRows = (await stack().db('ledger_entries').where({ org_id: other.orgId }).sum({ s: 'amount_micros' }).first()) as {
          s: string;
        };
        assert.equal(micros(balance.balance_usd), Number(theirRows.s));
      });

      it('bad input is 400 naming the parameter; a key without the receipts scope is 403', async () => {
        const cases: [string, number, string][] = [
          ['/v1/usage', 400, 'start_time'],
          ['/v1/usage?start_time=yesterday', 400, 'start_time'],
          [`/v1/usage?start_time=${window.start}&end_time=${window.start}`, 400, 'end_time'],
          [`/v1/usage?start_time=${window.start}&bucket_width=1m`, 400, 'bucket_width'],
          [`/v1/usage?start_time=${window.start}&group_by=model`, 400, 'group_by'],
          [`/v1/usage?start_time=${window.start}&group_by=lane,lane`, 400, 'group_by'],
          [`/v1/usage?start_time=${window.start}&limit=32`, 400, 'limit'],
          [`/v1/usage?start_time=${window.start}&page=12`, 400, 'page'],
          [`/v1/usage?start_time=${window.start}&project_ids=p`, 400, 'project_ids'],
          [`/v1/usage?start_time=${window.start}&group_by%5B%5D=mode&group_by%5B%5D=model`, 400, 'group_by'],
          [`/v1/usage?start_time=${window.start}&api_key_ids=`, 400, 'api_key_ids'],
          [`/v1/usage?start_time=${window.start}&api_key_ids%5B%5D=${'k'.repeat(201)}`, 400, 'api_key_ids'],
          [`/v1/usage?start_time=${window.start}&models%5B%5D=`, 400, 'models'],
          [`/v1/usage?start_time=${window.start}&models=a,,b`, 400, 'models'],
          ['/v1/receipts?status=done', 400, 'status'],
          ['/v1/receipts?lane=fast', 400, 'lane'],
          ['/v1/receipts?limit=101', 400, 'limit'],
          ['/v1/receipts?format=xml', 400, 'format'],
          ['/v1/receipts?start_time=-1', 400, 'start_time'],
          ['/v1/receipts?metadata.project=atlas', 400, 'metadata.project'],
          ['/v1/receipts?after=req_none', 404, 'after'],
          ['/v1/ledger?kind=gift', 400, 'kind'],
          ['/v1/ledger?after=last', 400, 'after'],
          ['/v1/ledger?after=999999999999', 404, 'after'],
          ['/v1/ledger?format=xml', 400, 'format'],
        ];
        for (const [path, status, param] of cases) {
          const reply = await call(api, 'GET', path, { key: keys[0].key });
          assert.deepEqual([reply.status, reply.body.error?.param], [status, param], `${path}: ${JSON.stringify(reply.body)}`);
        }
        const narrow = (await createApiKey(stack().db, { orgId: org.orgId, keyKind: 'live', scopes: ['completions'] })).apiKey;
        for (const path of ['/v1/receipts', `/v1/usage?start_time=${window.start}`, '/v1/balance', '/v1/ledger']) {
          const reply = await call(api, 'GET', path, { key: narrow });
          assert.deepEqual([reply.status, reply.body.error?.code], [403, 'insufficient_scope'], path);
        }
      });

      it('/openapi.json describes every new route', async () => {
        const doc = (await (await fetch(`${api.url}/openapi.json`)).json()) as {
          paths: Record<string, Record<string, { operationId: string }>>;
        };
        assert.deepEqual(
          ['/v1/usage', '/v1/balance', '/v1/receipts', '/v1/ledger'].map((p) => doc.paths[p]?.get?.operationId),
          ['getUsage', 'getBalance', 'listReceipts', 'listLedgerEntries'],
        );
      });
    });
  }
});
