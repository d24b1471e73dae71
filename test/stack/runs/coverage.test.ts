import assert from 'node:assert/strict';
import { loadConfig } from '../../../infra/config';
import { randomUUID } from 'node:crypto';
import { createBenchmarkActivities } from '../../../activities/benchmark';
import { launchRun, recordQuestionResult } from '../../../db/repositories/runs';
import { RUN_JUDGE_TAG } from '../../../domain/run-judging';
import { certificationSpec } from '../../../domain/runs';
import { createEngines } from '../../../engines';
import { createLogger } from '../../../infra/log';
import { getBalance } from '../../../db/repositories/ledger';
import {
  ANTHROPIC_TEST_KEY,
  anthropicReply,
  GOOGLE_TEST_KEY,
  googleReply,
  OPENAI_TEST_KEY,
  openAiReply,
  startAnthropicLoopback,
  startGoogleLoopback,
  startOpenAiLoopback,
  type Loopback,
  type RecordedRequest,
} from '../../fixtures/providers';
import { exemptFromAudit } from '../../harness/audit';
import { stack } from '../../harness/stack';
import { call, newOrg, startApi, type Api } from '../api/helpers';
import { customMode, startProductWorkers } from '../deliberation/helpers';
import { demoModes, everyJudge, judgedRow, untilEnded } from './helpers';
import { settingsOf, testSecretBox } from '../../harness/settings';

/**
 * A verdict needs its questions (issue 26 item 8). Seen on a real small model: run judges that answer in prose give
 * no readable verdict, and such a run used to end `completed` with 0 judgments, `win_rate: null`, no warning and
 * nothing refunded. Here the three providers answer over loopback servers, the run judges in prose: the run ends
 * `incomplete`, without results, says why, and credits back every question it was paid for.
 */
describe('runs: coverage, what a run was paid for and what it delivered', function () {
  this.timeout(240_000);
  const servers: Loopback[] = [];
  let workers: { stop(): Promise<void> };
  let api: Api;
  const prose = 'Both answers have merit; I would lean towards the first one, as it reads more naturally.';
  const isRunJudge = (req: RecordedRequest): boolean => req.bodyText.includes(RUN_JUDGE_TAG);

  before(async () => {
    const openai = await startOpenAiLoopback((req) => openAiReply({ text: isRunJudge(req) ? prose : 'The answer is 42.' }));
    const anthropic = await startAnthropicLoopback((req) => anthropicReply({ text: isRunJudge(req) ? prose : 'The answer is 42.' }));
    const google = await startGoogleLoopback((req) => googleReply({ text: isRunJudge(req) ? prose : 'The answer is 42.' }));
    servers.push(openai, anthropic, google);
    workers = await startProductWorkers({
      QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
      QUORUM_OPENAI_BASE_URL: openai.baseUrl,
      QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY,
      QUORUM_ANTHROPIC_BASE_URL: anthropic.baseUrl,
      QUORUM_GOOGLE_API_KEY: GOOGLE_TEST_KEY,
      QUORUM_GOOGLE_BASE_URL: google.baseUrl,
    });
    api = await startApi('B', {
      env: {
        ...process.env,
        QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
        QUORUM_ANTHROPIC_API_KEY: ANTHROPIC_TEST_KEY,
        QUORUM_GOOGLE_API_KEY: GOOGLE_TEST_KEY,
      },
      runs: { testsPerDay: 20, certificationsPerDay: 3, window: 4 },
    });
  });
  after(async () => {
    await api.close();
    await workers.stop();
    for (const s of servers) await s.close();
  });

  it('a live test run whose judges never give a readable verdict ends incomplete, without results, and is refunded in full', async () => {
    const org = await newOrg(20);
    const mode = await customMode(org.orgId, 'quorum-panel', { rounds: 1, critique: 'never', express: 'never' });
    const before = (await getBalance(stack().db, org.orgId)).balanceMicros;
    const launched = await call(api, 'POST', '/v1/tests', { key: org.ownerKey, body: { model: mode.ticker, questions: { easy: 3 } } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const billed = Math.round(Number(launched.body.billed_usd) * 1_000_000);
    assert.ok(billed > 0, 'a live run is charged up front');

    const ended = await untilEnded(api, org.ownerKey, 'tests', String(launched.body.batch_id));
    const batch = ended.body.batch as {
      state: string;
      results: unknown;
      unread_verdicts: number;
      warnings: string[];
      refunded_usd: number;
      coverage: { judged: number; total: number; met: boolean };
    };
    assert.equal(batch.state, 'incomplete');
    assert.equal(batch.results, null, 'no results to show');
    assert.ok(batch.unread_verdicts >= 9, `three judges on three questions: ${batch.unread_verdicts} unreadable`);
    assert.deepEqual([batch.coverage.judged, batch.coverage.total, batch.coverage.met], [0, 3, false]);
    assert.ok(
      batch.warnings.some((w) => /No judge's verdict could be read/.test(w)),
      JSON.stringify(batch.warnings),
    );
    // Nothing was delivered: the whole charge is credited back, and the balance is where it was.
    assert.equal(Math.round(batch.refunded_usd * 1_000_000), billed);
    assert.equal((await getBalance(stack().db, org.orgId)).balanceMicros, before);
    // Such a run is no evidence: the estimate still reasons from the classifier.
    const estimate = await call(api, 'POST', '/v1/estimate', {
      key: org.ownerKey,
      body: { model: mode.ticker, messages: [{ role: 'user', content: 'What is 6 times 7?' }] },
    });
    assert.notEqual((estimate.body.deliberation_value as { basis: string }).basis, 'test_runs');
  });
});

describe('runs: a certification whose questions mostly failed has no verdict', function () {
  this.timeout(60_000);

  it('two judged questions of 150, every judge won: incomplete, no verdict, the $50 refunded in full', async () => {
    const { db } = stack();
    const org = await newOrg(60);
    // The run's row and its end, without its workflow: the auditor's workflow check is told.
    exemptFromAudit(org.orgId, ['run_charge_without_workflow'], 'a run launched and ended by its repository functions, with no workflow');
    const modes = await demoModes(org.orgId);
    const mode = (await db('modes').where({ id: modes.strong.A }).first('current_version')) as { current_version: number };
    const runId = randomUUID();
    const spec = certificationSpec(7);
    const launched = await launchRun(
      db,
      {
        id: runId,
        orgId: org.orgId,
        kind: 'certification',
        workflowId: `cert/${org.orgId}/${runId}`,
        idempotencyKey: runId,
        fingerprint: 'coverage-test',
        keyKind: 'live',
        apiKeyId: org.keyId,
        modeId: modes.strong.A,
        modeVersion: mode.current_version,
        model: modes.strong.B,
        spec,
        totalQuestions: 150,
        billedMicros: 50_000_000,
        estimatedMinutes: 30,
      },
      3,
    );
    assert.ok('created' in launched && launched.created);
    // The two questions that came back, judged a win by every judge on both repeats.
    for (const id of ['q1', 'q2'])
      await recordQuestionResult(
        db,
        runId,
        judgedRow(
          id,
          'light',
          everyJudge(() => 'win'),
        ),
      );
    // The run's own end step, on the real database.
    const activities = createBenchmarkActivities({
      db,
      engines: createEngines({ ...settingsOf({}) }),
      log: createLogger('test', () => undefined),
      config: loadConfig(),
      box: testSecretBox(),
    });
    const summary = await activities.finishRun({ runId, kind: 'certification', state: 'completed' });
    assert.equal(summary?.verdict, null, 'an interval of [1, 1] on two questions is no verdict');
    assert.deepEqual([summary?.coverage?.judged, summary?.coverage?.total, summary?.coverage?.met], [2, 150, false]);
    const row = (await db('runs').where({ id: runId }).first('state', 'refunded_micros')) as { state: string; refunded_micros: string };
    assert.equal(row.state, 'incomplete');
    // No verdict, no charge (issue 38 item 7): the whole $50 comes back, not the 148/150 share (49,333,333 µ$).
    assert.equal(BigInt(row.refunded_micros), 50_000_000n);
    const refunds = await db('ledger_entries').where({ org_id: org.orgId, kind: 'run_refund', request_id: runId });
    assert.deepEqual(
      refunds.map((r: { amount_micros: string }) => BigInt(r.amount_micros)),
      [50_000_000n],
    );
  });
});
