import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getBalance } from '../../../db/repositories/ledger';
import type { Form } from '../../../domain/form';
import { RunListSchema } from '../../../api/v1/run-list-resources';
import { CertifyPollSchema, TestPollSchema } from '../../../api/v1/run-resources';
import { call, newKey, newOrg, startApi, type Api, type Reply } from '../api/helpers';
import { requestLedger, startProductWorkers } from '../deliberation/helpers';
import { connect, json } from '../mcp/helpers';
import { stack } from '../../harness/stack';
import { demoModes, unjudgedPrices, untilEnded } from './helpers';

/**
 * Issue 28 items 1 and 2 through the real stack, in both Forms: GET /v1/runs (newest first, a cursor, each filter,
 * each bad parameter), POST /v1/{tests,certify}/{id}/cancel (a long run stops `cancelled` with the unjudged share of
 * its charge credited back, once; an ended run is left as it was), and the MCP tools `list_runs` and `cancel_run`.
 */

const FORMS: readonly Form[] = ['A', 'B'];
const micros = (usd: unknown): bigint => BigInt(Math.round((usd as number) * 1_000_000));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Batch = ReturnType<typeof TestPollSchema.parse>['batch'];

/** The refund rule of docs/runs.md, computed here: the share of the charge of each question never judged, rounded down. */

async function answered(id: string): Promise<number> {
  const [{ n }] = await stack().db('run_questions').where({ run_id: id }).count<{ n: string }[]>('* as n');
  return Number(n);
}

/** Waits until a run has judged `n` questions, so a cancel lands on a run part-way through. */
async function untilAnswered(id: string, n: number): Promise<void> {
  for (const until = Date.now() + 120_000; (await answered(id)) < n; await sleep(100))
    if (Date.now() > until) throw new Error(`run ${id} answered fewer than ${n} questions in time`);
}

/** A launch's id and its up-front charge. */
async function launch(api: Api, key: string, path: '/v1/tests' | '/v1/certify', body: object): Promise<{ id: string; billed: bigint }> {
  const r = await call(api, 'POST', path, { key, body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { id: r.body.batch_id as string, billed: micros(r.body.billed_usd) };
}

describe('runs: list and cancel (issue 28 items 1 and 2)', function () {
  this.timeout(600_000);
  let workers: { stop(): Promise<void> };
  const apis = {} as Record<Form, Api>;
  before(async () => {
    // Engines that take a moment and one question in flight per run: a 120-question run is still going when cancelled.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:100' });
    for (const form of FORMS) apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 1 } });
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  for (const form of FORMS) {
    it(`Form ${form}: lists newest first a page at a time, filters, refuses bad parameters; cancels a long run and a certification once, leaves an ended run`, async () => {
      const api = apis[form];
      const org = await newOrg(200);
      const key = org.ownerKey;
      const modes = await demoModes(org.orgId);
      const opening = (await getBalance(stack().db, org.orgId)).balanceMicros;
      const light = (n: number): object => (form === 'A' ? { buckets: { light: n } } : { questions: { easy: n } });
      const many = form === 'A' ? { buckets: { light: 40, medium: 40, hard: 40 } } : { questions: { easy: 40, medium: 40, hard: 40 } };

      // Three runs, oldest first: a small test that completes, a long test, a certification.
      const small = await launch(api, key, '/v1/tests', { model: modes.strong[form], ...light(2) });
      const smallEnd = TestPollSchema.parse((await untilEnded(api, key, 'tests', small.id)).body).batch;
      assert.equal(smallEnd.state, 'completed');
      const long = await launch(api, key, '/v1/tests', { model: modes.weak[form], ...many });
      const cert = await launch(api, key, '/v1/certify', { model: modes.strong[form] });

      // The long run, part-way through, is cancelled: it ends `cancelled` in the answer itself.
      await untilAnswered(long.id, 2);
      const cancelled = await call(api, 'POST', `/v1/tests/${long.id}/cancel`, { key });
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
      const longEnd = TestPollSchema.parse(cancelled.body).batch;
      assert.equal(longEnd.id, long.id);
      assert.equal(longEnd.state, 'cancelled');
      const done = longEnd.progress.done;
      assert.ok(done >= 2 && done < 120, `answered ${done}`);
      assert.equal(done, await answered(long.id), 'the batch counts the stored questions');
      assert.equal(longEnd.coverage?.judged, done, 'every answered sim question was judged');
      // Issue 38 item 9: the unjudged questions' own prices.
      const longRefund = await unjudgedPrices(long.id);
      assert.ok(longRefund > 0n);
      assert.equal(micros(longEnd.refunded_usd), longRefund);
      assert.deepEqual(await requestLedger(org.orgId, long.id), [
        { kind: 'test_run_charge', amount: -long.billed },
        { kind: 'run_refund', amount: longRefund },
      ]);
      // A second cancel is a no-op with the same answer; nothing more is credited.
      const again = await call(api, 'POST', `/v1/tests/${long.id}/cancel`, { key });
      assert.equal(again.status, 200);
      const againBatch = TestPollSchema.parse(again.body).batch;
      assert.deepEqual(
        [againBatch.state, againBatch.refunded_usd, againBatch.finished_at],
        ['cancelled', longEnd.refunded_usd, longEnd.finished_at],
      );
      assert.equal((await requestLedger(org.orgId, long.id)).length, 2);

      // The certification through its own route, as soon as it is launched.
      const certReply = await call(api, 'POST', `/v1/certify/${cert.id}/cancel`, { key });
      assert.equal(certReply.status, 200, JSON.stringify(certReply.body));
      const certPoll = CertifyPollSchema.parse(certReply.body);
      assert.equal(certPoll.batch.state, 'cancelled');
      assert.equal(certPoll.certification, null, 'a cancelled certification has no verdict');
      // Issue 38 item 7: no verdict, no charge.
      const certRefund = cert.billed;
      assert.equal(micros(certPoll.batch.refunded_usd), certRefund);
      assert.equal(cert.billed, 50_000_000n);

      // An ended run is returned as it ended: the same poll, nothing credited.
      const before = TestPollSchema.parse((await call(api, 'GET', `/v1/tests?batch_id=${small.id}`, { key })).body).batch;
      const ended = await call(api, 'POST', `/v1/tests/${small.id}/cancel`, { key });
      assert.equal(ended.status, 200);
      const endedBatch = TestPollSchema.parse(ended.body).batch;
      assert.deepEqual(
        [endedBatch.state, endedBatch.refunded_usd, endedBatch.finished_at, endedBatch.results],
        [before.state, before.refunded_usd, before.finished_at, before.results],
      );
      assert.equal(endedBatch.state, 'completed');
      assert.deepEqual(await requestLedger(org.orgId, small.id), [{ kind: 'test_run_charge', amount: -small.billed }]);

      // The balance is what it was less the three charges plus the two refunds.
      const balance = (await getBalance(stack().db, org.orgId)).balanceMicros;
      assert.equal(balance, opening - small.billed - long.billed - cert.billed + longRefund + certRefund);

      // Not found, with the poll's code: an unknown id, another kind's route, another organisation's run, not a uuid.
      const notFound = form === 'B' ? 'batch_not_found' : 'not_found';
      const stranger = await newOrg(1);
      for (const [path, k] of [
        [`/v1/tests/${randomUUID()}/cancel`, key],
        [`/v1/certify/${small.id}/cancel`, key],
        [`/v1/tests/${cert.id}/cancel`, key],
        [`/v1/tests/${small.id}/cancel`, stranger.ownerKey],
        ['/v1/tests/not-a-batch/cancel', key],
      ] as const) {
        const r = await call(api, 'POST', path, { key: k });
        assert.equal(r.status, 404, path);
        assert.equal(r.body.error?.code, notFound, path);
      }

      // The list: newest first, two to a page, each entry exactly its poll's batch.
      const page = async (query: string, k = key): Promise<Reply> => call(api, 'GET', `/v1/runs${query}`, { key: k });
      const polls = new Map<string, { batch: Batch; certification?: unknown }>();
      for (const [id, kind] of [
        [small.id, 'tests'],
        [long.id, 'tests'],
        [cert.id, 'certify'],
      ] as const)
        polls.set(id, (await call(api, 'GET', `/v1/${kind}?batch_id=${id}`, { key })).body as { batch: Batch });
      const first = await page('?limit=2');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const p1 = RunListSchema.parse(first.body);
      assert.deepEqual(
        p1.data.map((b) => b.id),
        [cert.id, long.id],
      );
      assert.equal(p1.has_more, true);
      assert.equal(p1.last_id, long.id);
      const p2 = RunListSchema.parse((await page(`?limit=2&after=${p1.last_id}`)).body);
      assert.deepEqual(
        p2.data.map((b) => b.id),
        [small.id],
      );
      assert.equal(p2.has_more, false);
      for (const entry of [...p1.data, ...p2.data]) {
        const poll = polls.get(entry.id);
        const { certification, ...batch } = entry;
        assert.deepEqual(batch, poll?.batch, `entry ${entry.id} is its poll's batch`);
        if (entry.kind === 'certification') assert.deepEqual(certification, null);
        else assert.equal(certification, undefined);
      }
      const ids = async (query: string): Promise<string[]> => {
        const r = await page(query);
        assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
        return RunListSchema.parse(r.body).data.map((b) => b.id);
      };
      assert.deepEqual(await ids(''), [cert.id, long.id, small.id]);
      assert.deepEqual(await ids('?kind=test'), [long.id, small.id]);
      assert.deepEqual(await ids('?kind=certify'), [cert.id]);
      assert.deepEqual(await ids(`?model=${encodeURIComponent(modes.weak[form])}`), [long.id]);
      assert.deepEqual(await ids(`?model=${encodeURIComponent(modes.strong[form])}&state=cancelled`), [cert.id]);
      assert.deepEqual(await ids('?state=cancelled'), [cert.id, long.id]);
      assert.deepEqual(await ids('?state=completed'), [small.id]);
      assert.deepEqual(await ids('?state=running'), []);
      assert.deepEqual(await ids(`?kind=test&limit=1&after=${long.id}`), [small.id]);
      // Another organisation sees none of them.
      assert.deepEqual(RunListSchema.parse((await page('', stranger.ownerKey)).body).data, []);

      // Bad parameters: 400 invalid_request naming the parameter.
      for (const [query, param] of [
        ['?limit=0', 'limit'],
        ['?limit=101', 'limit'],
        ['?limit=abc', 'limit'],
        ['?limit=1.5', 'limit'],
        ['?limit=1&limit=2', 'limit'],
        ['?after=not-a-batch', 'after'],
        [`?after=${randomUUID()}`, 'after'],
        ['?kind=deliberation', 'kind'],
        ['?state=done', 'state'],
        ['?state=launching', 'state'],
        ['?model=', 'model'],
        ['?model=a%00b', 'model'],
      ] as const) {
        const r = await page(query);
        assert.equal(r.status, 400, query);
        assert.equal(r.body.error?.code, 'invalid_request', query);
        assert.equal(r.body.error?.param, param, query);
        assert.equal(r.body.error?.type, 'invalid_request_error', query);
      }
      // Another organisation's run is no cursor here.
      assert.equal((await page(`?after=${small.id}`, stranger.ownerKey)).status, 400);

      // Scopes, as the polls require them: `tests` reads test runs, `certify` certifications.
      const testsOnly = await newKey(org.orgId, { scopes: ['tests'] });
      const testsOnlyPage = await page('', testsOnly);
      assert.deepEqual(
        RunListSchema.parse(testsOnlyPage.body).data.map((b) => b.id),
        [long.id, small.id],
      );
      const forbidden = await page('?kind=certify', testsOnly);
      assert.equal(forbidden.status, 403);
      assert.equal(forbidden.body.error?.code, 'insufficient_scope');
      const modelsOnly = await newKey(org.orgId, { scopes: ['models'] });
      assert.equal((await page('', modelsOnly)).status, 403);
      assert.equal((await call(api, 'POST', `/v1/certify/${cert.id}/cancel`, { key: testsOnly })).status, 403);

      // The poll without an id stays as spec 02 says.
      const missing = await call(api, 'GET', '/v1/tests', { key });
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error?.code, 'missing_batch_id');
    });
  }

  it('MCP: list_runs and cancel_run in Form B through the SDK client, with the REST codes; Form A keeps its six tools', async () => {
    const org = await newOrg(50);
    const modes = await demoModes(org.orgId);
    const small = await launch(apis.B, org.ownerKey, '/v1/tests', { model: modes.strong.B, questions: { easy: 1 } });
    await untilEnded(apis.B, org.ownerKey, 'tests', small.id);
    const long = await launch(apis.B, org.ownerKey, '/v1/tests', { model: modes.weak.B, questions: { easy: 40, medium: 40, hard: 40 } });

    const a = await connect(apis.A, org.ownerKey);
    const namesA = (await a.listTools()).tools.map((t) => t.name);
    assert.equal(namesA.length, 6);
    assert.ok(!namesA.includes('list_runs') && !namesA.includes('cancel_run'));
    await a.close();

    const client = await connect(apis.B, org.ownerKey);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('list_runs') && names.includes('cancel_run'));

    const listed = await client.callTool({ name: 'list_runs', arguments: { limit: 1 } });
    assert.ok(!listed.isError, JSON.stringify(listed));
    const l1 = RunListSchema.parse(json(listed));
    assert.deepEqual(
      l1.data.map((b) => b.id),
      [long.id],
    );
    assert.equal(l1.has_more, true);
    const l2 = RunListSchema.parse(json(await client.callTool({ name: 'list_runs', arguments: { limit: 1, after: l1.last_id } })));
    assert.deepEqual(
      l2.data.map((b) => [b.id, b.state]),
      [[small.id, 'completed']],
    );
    const tests = RunListSchema.parse(json(await client.callTool({ name: 'list_runs', arguments: { kind: 'test', state: 'completed' } })));
    assert.deepEqual(
      tests.data.map((b) => b.id),
      [small.id],
    );
    // Forwarded tools answer with the REST error object and its status (spec 02, shape 1).
    for (const args of [{ limit: 0 }, { kind: 'deliberation' }, { after: 'x' }, { state: 'done' }]) {
      const bad = await client.callTool({ name: 'list_runs', arguments: args });
      assert.equal(bad.isError, true, JSON.stringify(args));
      const body = json(bad) as { error: { code: string; param: string }; http_status: number };
      assert.equal(body.http_status, 400);
      assert.equal(body.error.code, 'invalid_request');
      assert.equal(body.error.param, Object.keys(args)[0]);
    }

    await untilAnswered(long.id, 1);
    const stopped = await client.callTool({ name: 'cancel_run', arguments: { batch_id: long.id } });
    assert.ok(!stopped.isError, JSON.stringify(stopped));
    const batch = TestPollSchema.parse(json(stopped)).batch;
    assert.equal(batch.state, 'cancelled');
    assert.equal(micros(batch.refunded_usd), await unjudgedPrices(long.id));
    const twice = TestPollSchema.parse(json(await client.callTool({ name: 'cancel_run', arguments: { batch_id: long.id } }))).batch;
    assert.deepEqual([twice.state, twice.refunded_usd], ['cancelled', batch.refunded_usd]);
    const endedRun = TestPollSchema.parse(json(await client.callTool({ name: 'cancel_run', arguments: { batch_id: small.id } }))).batch;
    assert.equal(endedRun.state, 'completed');
    const unknown = await client.callTool({ name: 'cancel_run', arguments: { batch_id: randomUUID() } });
    assert.equal(unknown.isError, true);
    assert.deepEqual(
      [(json(unknown) as { http_status: number }).http_status, (json(unknown).error as { code: string }).code],
      [404, 'batch_not_found'],
    );
    await client.close();

    // A cancel answers as the poll does, `svc.paired` of a paired re-run included.
    const paired = await launch(apis.B, org.ownerKey, '/v1/tests', { model: modes.strong.B, svc: { same_questions_as: small.id } });
    const pairedPoll = (await untilEnded(apis.B, org.ownerKey, 'tests', paired.id)).body;
    assert.ok((pairedPoll.svc as { paired?: unknown } | undefined)?.paired, JSON.stringify(pairedPoll));
    assert.deepEqual((await call(apis.B, 'POST', `/v1/tests/${paired.id}/cancel`, { key: org.ownerKey })).body, pairedPoll);

    // A key without `certify` lists test runs only, and cannot read a certification's kind.
    const testsOnly = await connect(apis.B, await newKey(org.orgId, { scopes: ['tests'] }));
    const refused = await testsOnly.callTool({ name: 'list_runs', arguments: { kind: 'certify' } });
    assert.equal(refused.isError, true);
    assert.equal((json(refused).error as { code: string }).code, 'insufficient_scope');
    await testsOnly.close();
  });
});
