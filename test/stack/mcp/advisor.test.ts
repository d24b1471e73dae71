import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getBalance } from '../../../db/repositories/ledger';
import { quotedRequest } from '../../../operations/quotes';
import { launchFingerprint, testRunSpec } from '../../../operations/run-launch';
import type { QuotedRun } from '../../../db/repositories/quotes';
import { launchRun } from '../../../db/repositories/runs';
import { workflowIds } from '../../../domain/workflow-ids';
import { cancelSignal } from '../../../workflows/messages';
import { call, moneySnapshot, newKey, newOrg, startApi, type Api, type TestOrg } from '../api/helpers';
import { requestLedger, startProductWorkers } from '../deliberation/helpers';
import { limitedDb } from '../../harness/limited-db';
import { stack } from '../../harness/stack';
import { demoModes, untilEnded } from '../runs/helpers';
import { connect, json, refusal, type ToolJson } from './helpers';

/** Spec 02's advisor through the official MCP client: advice from real runs, quotes approved once, the quote lifecycle's codes. */

interface BucketJson {
  bucket: string;
  questions: number;
  win_rate: number | null;
  half_width: number | null;
  thin: boolean;
  more_questions: number;
  projected_half_width: number;
}
interface QuoteJson {
  quote_id: string;
  kind: string;
  price_usd: number;
  payer: string;
  run: { questions: Record<string, number> };
}

async function ask(client: Client, args: Record<string, unknown>): Promise<ToolJson> {
  const result = await client.callTool({ name: 'ask_advisor', arguments: args });
  assert.ok(!result.isError, JSON.stringify(result));
  return json(result);
}

const approve = (client: Client, quoteId: string): ReturnType<Client['callTool']> =>
  client.callTool({ name: 'approve_quote', arguments: { quote_id: quoteId } });

describe('mcp: the mode advisor (ask_advisor, approve_quote)', function () {
  this.timeout(180_000);
  let api: Api;
  let noHistory: Api;
  let workers: { stop(): Promise<void> };
  let org: TestOrg;
  let strong: string;
  let strongId: string;
  let client: Client;
  let batchId: string;

  before(async () => {
    workers = await startProductWorkers();
    api = await startApi('B');
    noHistory = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 16, chatHistory: false } });
    org = await newOrg(200);
    const modes = await demoModes(org.orgId);
    strong = modes.strong.B;
    strongId = modes.strong.A;
    // A small real run: enough easy and medium questions to read, too few hard ones to trust.
    const launched = await call(api, 'POST', '/v1/tests', {
      key: org.ownerKey,
      body: { model: strong, questions: { easy: 6, medium: 6, hard: 3 } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    batchId = launched.body.batch_id as string;
    const done = await untilEnded(api, org.ownerKey, 'tests', batchId);
    assert.equal((done.body.batch as { state: string }).state, 'completed');
    client = await connect(api, org.ownerKey);
  });
  after(async () => {
    await client.close();
    await api.close();
    await noHistory.close();
    await workers.stop();
  });

  it('names the thin buckets with the numbers behind them, from the run, and quotes the run it recommends', async () => {
    const advice = await ask(client, { model: strong, question: 'Is this mode ready to certify?' });
    assert.deepEqual(advice.runs, [{ batch_id: batchId, kind: 'test', state: 'completed' }]);
    const buckets = advice.buckets as BucketJson[];
    const hard = buckets.find((b) => b.bucket === 'hard');
    assert.ok(hard);
    assert.equal(hard.questions, 3);
    assert.equal(hard.thin, true);
    assert.ok(hard.more_questions >= 7 && hard.more_questions <= 100, JSON.stringify(hard));
    assert.ok(hard.projected_half_width <= 0.1 || hard.more_questions === 100, JSON.stringify(hard));
    assert.ok((advice.thin_buckets as string[]).includes('hard'));
    // Every number the words say is in the data.
    const answer = advice.answer as string;
    assert.ok(answer.includes(`hard: 3 questions, win rate ${(hard.win_rate as number).toFixed(3)}`), answer);
    assert.ok(answer.includes(`${hard.more_questions} more`), answer);
    const certification = advice.certification as { ready: boolean; reasons: string[] };
    assert.equal(certification.ready, false);
    assert.ok(certification.reasons.some((r) => r.includes('only 3 judged hard questions')));
    // The quote prices exactly the recommended run.
    const recommendation = advice.recommendation as { kind: string; questions: Record<string, number> };
    assert.equal(recommendation.kind, 'test_run');
    const quote = advice.quote as QuoteJson;
    assert.ok(quote, JSON.stringify(advice));
    assert.deepEqual(quote.run.questions, recommendation.questions);
    assert.equal(quote.run.questions.hard, hard.more_questions);
    assert.ok(quote.price_usd > 0);
    assert.equal(quote.payer, 'organisation');
    // The same advice about the run alone.
    const one = await ask(client, { model: strong, batch_id: batchId });
    assert.deepEqual(one.buckets, advice.buckets);
  });

  it('two approvals of one quote at once launch one run, checked in Temporal and in the ledger; a third is quote_already_used', async () => {
    const quote = (await ask(client, { model: strong })).quote as QuoteJson;
    const other = await connect(api, org.ownerKey);
    const before = (await getBalance(stack().db, org.orgId)).balanceMicros;
    const results = await Promise.all([approve(client, quote.quote_id), approve(other, quote.quote_id)]);
    await other.close();
    const won = results.filter((r) => !r.isError).map(json);
    const lost = results.filter((r) => r.isError).map(refusal);
    assert.equal(won.length, 1, JSON.stringify(results));
    assert.deepEqual(
      lost.map((l) => [l.code, l.status]),
      [['quote_already_used', 409]],
    );
    const runId = won[0].batch_id as string;
    assert.equal(lost[0].svc?.batch_id, runId, 'the loser is told which run the quote launched');
    assert.ok((won[0].billed_usd as number) <= quote.price_usd);
    assert.equal(won[0].quote_id, quote.quote_id);

    const handle = stack().env.client.workflow.getHandle(workflowIds.quote(quote.quote_id, 0));
    assert.equal((await handle.describe()).status.name, 'RUNNING');
    // Runs started under the quote's ids (its questions' child workflows share the prefix).
    const started = stack().env.client.workflow.list({
      query: `WorkflowId STARTS_WITH "quote/${quote.quote_id}" AND WorkflowType = "benchmarkWorkflow"`,
    });
    const ids: string[] = [];
    for await (const w of started) ids.push(w.workflowId);
    assert.deepEqual(ids, [workflowIds.quote(quote.quote_id, 0)]);
    assert.deepEqual(await requestLedger(org.orgId, runId), [
      { kind: 'test_run_charge', amount: -BigInt(Math.round(quote.price_usd * 1e6)) },
    ]);
    const after = (await getBalance(stack().db, org.orgId)).balanceMicros;
    assert.equal(before - after, BigInt(Math.round(quote.price_usd * 1e6)));

    const again = refusal(await approve(client, quote.quote_id));
    assert.deepEqual([again.code, again.status, again.svc?.batch_id], ['quote_already_used', 409, runId]);
    // The launched run is not this test's subject: stop it, and its unanswered questions are credited back.
    await handle.signal(cancelSignal);
    await untilEnded(api, org.ownerKey, 'tests', runId);
    assert.equal((await requestLedger(org.orgId, runId)).filter((e) => e.kind === 'test_run_charge').length, 1);
  });

  it('an expired quote is 410, a price that rose is 409 requoted with a new quote, a payer mismatch 403; none of them charges', async () => {
    const money = await moneySnapshot(org.orgId);
    const expiring = (await ask(client, { model: strong })).quote as QuoteJson;
    await stack()
      .db('advisor_quotes')
      .where({ id: expiring.quote_id })
      .update({ expires_at: stack().db.raw("now() - interval '1 second'") });
    const expired = refusal(await approve(client, expiring.quote_id));
    assert.deepEqual([expired.code, expired.status], ['quote_expired', 410]);

    // A quote issued when the mode cost less than it does now.
    const cheap = (await ask(client, { model: strong })).quote as QuoteJson;
    await stack().db('advisor_quotes').where({ id: cheap.quote_id }).decrement('price_micros', 1);
    const requoted = refusal(await approve(client, cheap.quote_id));
    assert.deepEqual([requoted.code, requoted.status], ['requoted', 409]);
    const fresh = requoted.svc?.quote as QuoteJson;
    assert.notEqual(fresh.quote_id, cheap.quote_id);
    assert.equal(fresh.price_usd, cheap.price_usd, 'the new quote is today’s price');
    assert.deepEqual(fresh.run, cheap.run);

    // A test key's quote bills nobody; a live key approving it would bill the organisation.
    const testKey = await newKey(org.orgId, { keyKind: 'test' });
    const testClient = await connect(api, testKey);
    const free = (await ask(testClient, { model: strong })).quote as QuoteJson;
    await testClient.close();
    assert.deepEqual([free.payer, free.price_usd], ['none', 0]);
    const mismatch = refusal(await approve(client, free.quote_id));
    assert.deepEqual([mismatch.code, mismatch.status], ['payer_mismatch', 403]);
    assert.equal(await moneySnapshot(org.orgId), money);
  });

  it('answers each bad request with its code, and quote refusals inside a successful answer', async () => {
    const codes = async (name: string, args: Record<string, unknown>): Promise<[string, number | undefined]> => {
      const r = refusal(await client.callTool({ name, arguments: args }));
      return [r.code, r.status];
    };
    assert.deepEqual(await codes('ask_advisor', { model: `${strong}:LAB` }), ['suffix_not_supported', 400]);
    assert.deepEqual(await codes('ask_advisor', { model: 'NOPE:NOPE' }), ['mode_not_found', 404]);
    assert.deepEqual(await codes('ask_advisor', { model: strong, batch_id: 'run-1' }), ['invalid_batch_id', 400]);
    assert.deepEqual(await codes('ask_advisor', { model: strong, batch_id: randomUUID() }), ['invalid_batch_id', 400]);
    assert.deepEqual(await codes('approve_quote', { quote_id: 'q-1' }), ['invalid_quote_id', 400]);
    assert.deepEqual(await codes('approve_quote', { quote_id: randomUUID() }), ['quote_not_found', 404]);

    // Another organisation's quote is not found, never revealed.
    const stranger: TestOrg = await newOrg(5);
    const strangerClient = await connect(api, stranger.ownerKey);
    const mine = (await ask(client, { model: strong })).quote as QuoteJson;
    const hidden = refusal(await approve(strangerClient, mine.quote_id));
    assert.deepEqual([hidden.code, hidden.status], ['quote_not_found', 404]);
    // A platform mode is advised on, but its runs are not this organisation's to launch.
    const platform = await ask(strangerClient, { model: 'QRM:PANL' });
    await strangerClient.close();
    assert.equal(platform.quote, undefined);
    assert.equal(platform.quote_unavailable, 'mode_not_owned');

    const offClient = await connect(noHistory, org.ownerKey);
    const off = await ask(offClient, { model: strong });
    assert.equal(off.quote_unavailable, 'chat_history_required');
    const offApproval = refusal(await approve(offClient, mine.quote_id));
    await offClient.close();
    assert.deepEqual([offApproval.code, offApproval.status], ['chat_history_required', 503]);
  });

  it('a store that fails answers quote_read_failed, approval_not_recorded, advisor_unavailable or quote_not_stored, and charges nothing', async () => {
    const money = await moneySnapshot(org.orgId);
    const quote = (await ask(client, { model: strong })).quote as QuoteJson;
    // Each login lacks one grant: a real failure of that one read or write, nothing else broken.
    const cases: { role: string; revoke: string; check(c: Client): Promise<void> }[] = [
      {
        role: 'adv_no_quote_read',
        revoke: 'revoke select on advisor_quotes from ROLE',
        async check(c) {
          const r = refusal(await approve(c, quote.quote_id));
          assert.deepEqual([r.code, r.status], ['quote_read_failed', 503]);
        },
      },
      {
        // SELECT … FOR UPDATE needs an update grant on some column; the approval's own write is refused.
        role: 'adv_no_quote_write',
        revoke: 'revoke update on advisor_quotes from ROLE; grant update (launched_at) on advisor_quotes to ROLE',
        async check(c) {
          const r = refusal(await approve(c, quote.quote_id));
          assert.deepEqual([r.code, r.status], ['approval_not_recorded', 503]);
        },
      },
      {
        role: 'adv_no_results',
        revoke: 'revoke select on run_questions from ROLE',
        async check(c) {
          const r = refusal(await c.callTool({ name: 'ask_advisor', arguments: { model: strong } }));
          assert.deepEqual([r.code, r.status], ['advisor_unavailable', 502]);
        },
      },
      {
        role: 'adv_no_quote_insert',
        revoke: 'revoke insert on advisor_quotes from ROLE',
        async check(c) {
          const advice = await ask(c, { model: strong });
          assert.equal(advice.quote_unavailable, 'quote_not_stored');
        },
      },
    ];
    for (const { role, revoke, check } of cases) {
      const limited = await limitedDb(role, revoke);
      const failing = await startApi('B', { db: limited });
      const c = await connect(failing, org.ownerKey);
      try {
        await check(c);
      } finally {
        await c.close();
        await failing.close();
      }
    }
    // Nothing was charged, and the quote is still open: the approval can be made once the store is back.
    assert.equal(await moneySnapshot(org.orgId), money);
    assert.equal((await stack().db('advisor_quotes').where({ id: quote.quote_id }).first('state')).state, 'issued');
  });

  it('advisor_propose_mode designs a mode from a description that validates, saves and releases', async () => {
    const proposed = json(
      await client.callTool({
        name: 'advisor_propose_mode',
        arguments: { description: 'Careful step-by-step maths and code review for an engineering team', budget_usd: 1 },
      }),
    );
    assert.equal(proposed.valid, true, JSON.stringify(proposed));
    const spec = proposed.proposal as { seats_by_tier: Record<string, unknown[]> };
    assert.deepEqual(Object.keys(spec.seats_by_tier).sort(), ['experience', 'plus', 'pro']);
    const price = proposed.price as { per_call_usd: { deep: number }; within_budget: boolean };
    assert.ok(price.per_call_usd.deep > 0);
    const checked = json(await client.callTool({ name: 'validate_mode', arguments: { spec } }));
    assert.deepEqual([checked.valid, checked.refusals], [true, []]);
    const saved = json(await client.callTool({ name: 'save_mode', arguments: { spec, release: true } }));
    assert.deepEqual([saved.state, saved.version], ['released', 1], JSON.stringify(saved));
    assert.match(String(saved.mode_config_hash), /^[0-9a-f]{12}$/);
    const few = refusal(await client.callTool({ name: 'advisor_propose_mode', arguments: { description: 'anything', budget_usd: -1 } }));
    assert.deepEqual([few.code, few.status], ['invalid_request', 400]);
  });

  it('an approval whose process died after the charge is taken over: credited back, 502 launch_failed, then approved once', async () => {
    const quote = (await ask(client, { model: strong })).quote as QuoteJson;
    const row = (await stack().db('advisor_quotes').where({ id: quote.quote_id }).first()) as { seed: string; request: QuotedRun };
    const { db } = stack();
    // What a dead approval leaves: the quote approved long ago, its run charged under the attempt's key, never started.
    const runId = randomUUID();
    const request = quotedRequest(strong, row.request, false);
    const launched = await launchRun(
      db,
      {
        id: runId,
        orgId: org.orgId,
        kind: 'test',
        workflowId: workflowIds.quote(quote.quote_id, 0),
        idempotencyKey: `quote-${quote.quote_id}-0`,
        fingerprint: launchFingerprint('test', request),
        keyKind: 'live',
        apiKeyId: org.keyId,
        modeId: strongId,
        modeVersion: 1,
        model: strong,
        spec: testRunSpec(request, Number(row.seed)),
        totalQuestions: 1,
        billedMicros: Math.round(quote.price_usd * 1e6),
        estimatedMinutes: 1,
      },
      100,
    );
    assert.ok('created' in launched && launched.created);
    await db('advisor_quotes')
      .where({ id: quote.quote_id })
      .update({ state: 'approved', run_id: runId, approved_at: db.raw("now() - interval '5 minutes'") });
    const charged = (await getBalance(db, org.orgId)).balanceMicros;

    const failed = refusal(await approve(client, quote.quote_id));
    assert.deepEqual([failed.code, failed.status], ['launch_failed', 502]);
    assert.deepEqual(await requestLedger(org.orgId, runId), [
      { kind: 'test_run_charge', amount: -BigInt(Math.round(quote.price_usd * 1e6)) },
      { kind: 'run_refund', amount: BigInt(Math.round(quote.price_usd * 1e6)) },
    ]);
    assert.equal((await getBalance(db, org.orgId)).balanceMicros - charged, BigInt(Math.round(quote.price_usd * 1e6)));

    const approved = await approve(client, quote.quote_id);
    assert.ok(!approved.isError, JSON.stringify(approved));
    const run = json(approved);
    assert.notEqual(run.batch_id, runId);
    const handle = stack().env.client.workflow.getHandle(workflowIds.quote(quote.quote_id, 1));
    assert.equal((await handle.describe()).status.name, 'RUNNING');
    await handle.signal(cancelSignal);
    await untilEnded(api, org.ownerKey, 'tests', run.batch_id as string);
  });
});
