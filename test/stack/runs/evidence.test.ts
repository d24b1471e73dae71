import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestPollSchema } from '../../../api/v1/run-resources';
import { findMode, upsertMode } from '../../../db/repositories/modes';
import { classifyHeuristic } from '../../../domain/classifier';
import { modeTemplate } from '../../../domain/mode-spec';
import type { Form } from '../../../domain/form';
import { BUCKETS } from '../../../domain/questions/types';
import { BUCKET_DEPTH } from '../../../domain/runs';
import { call, FORMS, newKey, newOrg, startApi, USER, type Api, type TestOrg } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { Visitor } from '../console/helpers';
import { connect, json, refusal } from '../mcp/helpers';
import { quorumCli } from '../../harness/cli';
import { stack } from '../../harness/stack';
import { certifiedRow, demoModes, untilEnded } from './helpers';

/**
 * Issue 26 item 9 (DESIGN §10): runs on `sim` engines (test keys) are never evidence — not for
 * `published_version_uncertified`, not for the estimate's `deliberation_value`, not for the advisor — and a test key's
 * run is labelled simulated wherever it is shown. Only live runs on the mode version in question count.
 */

const QUESTIONS = { easy: 4, medium: 4, hard: 4 };
/** A prompt the heuristic reads as math, so a run's hard bucket would decide it when there is evidence. */
const PROMPT = USER('Compute 17 * 23 + 4, step by step, and explain each step of the working carefully.');

describe('runs: simulated runs are never evidence', function () {
  this.timeout(300_000);
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> };
  before(async () => {
    workers = await startProductWorkers();
    for (const form of FORMS) apis[form] = await startApi(form, { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 16 } });
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  /** Launches a test run with `key` and waits for its end, polled with a key of its own (the requests per minute). */
  async function ranToEnd(org: TestOrg, key: string, model: string): Promise<string> {
    const launched = await call(apis.B, 'POST', '/v1/tests', { key, body: { model, questions: QUESTIONS } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const id = launched.body.batch_id as string;
    const ended = await untilEnded(apis.B, await newKey(org.orgId, { scopes: ['tests'] }), 'tests', id);
    assert.equal((ended.body.batch as { state: string }).state, 'completed', JSON.stringify(ended.body));
    return id;
  }

  async function deliberationValue(key: string, model: string): Promise<Record<string, unknown>> {
    const r = await call(apis.B, 'POST', '/v1/estimate', { key, body: { model, messages: PROMPT } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.deliberation_value as Record<string, unknown>;
  }

  /** What the classifier heuristic alone says of the prompt: the estimate's answer when a mode has no evidence. */
  function heuristic(): Record<string, unknown> {
    const { verdict, reason, basis, evidence } = classifyHeuristic(PROMPT).deliberationValue;
    return { verdict, reason, basis, evidence };
  }

  it('a test key’s run is labelled simulated in both Forms and is evidence for neither the estimate nor the advisor', async () => {
    const org = await newOrg(100);
    const modes = await demoModes(org.orgId);
    const control = await demoModes(org.orgId);
    const testKey = await newKey(org.orgId, { keyKind: 'test' });
    // The same demo mode, twice: one run on a test key, one live (the control, on a mode of its own).
    const [simulatedRun, liveRun] = await Promise.all([
      ranToEnd(org, testKey, modes.strong.B),
      ranToEnd(org, org.ownerKey, control.strong.B),
    ]);

    for (const form of FORMS) {
      for (const [id, simulated] of [
        [simulatedRun, true],
        [liveRun, false],
      ] as const) {
        const r = await call(apis[form], 'GET', `/v1/tests?batch_id=${id}`, { key: await newKey(org.orgId, { scopes: ['tests'] }) });
        const poll = TestPollSchema.parse(r.body);
        assert.equal(poll.batch.simulated, simulated, `${form}: ${id}`);
        assert.equal(
          poll.batch.warnings.some((w) => w.startsWith('Simulated')),
          simulated,
          JSON.stringify(poll.batch.warnings),
        );
      }
    }

    // The estimate: the simulated run decides nothing; the live one (same design, its own mode) does.
    assert.deepEqual(await deliberationValue(org.ownerKey, modes.strong.B), heuristic());
    const grounded = await deliberationValue(org.ownerKey, control.strong.B);
    assert.equal(grounded.basis, 'test_runs', JSON.stringify(grounded));
    const depth = classifyHeuristic(PROMPT).depth;
    const bucket = BUCKETS.find((b) => BUCKET_DEPTH[b] === depth);
    // Every bucket of the run asked four questions, each its own cluster.
    assert.match(String(grounded.evidence), new RegExp(`^run ${liveRun}, ${bucket} questions: n=4 `));

    // The advisor: neither the simulated run nor a test key's call is read; a live call is.
    const prompt = USER(`Compare two sorting algorithms step by step. ${randomUUID()}`);
    for (const key of [testKey, org.ownerKey]) {
      const r = await call(apis.B, 'POST', '/v1/chat/completions', { key, body: { model: modes.strong.B, messages: prompt } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const client = await connect(apis.B, org.ownerKey);
    try {
      const ask = async (model: string) => {
        const result = await client.callTool({ name: 'ask_advisor', arguments: { model } });
        assert.ok(!result.isError, JSON.stringify(result));
        return json(result) as {
          runs: { batch_id: string }[];
          buckets: { questions: number }[];
          receipts: { calls: number };
          aggregation: { questions: number; winner: string } | null;
        };
      };
      const advised = await ask(modes.strong.B);
      assert.deepEqual(advised.runs, []);
      assert.ok(
        advised.buckets.every((b) => b.questions === 0),
        JSON.stringify(advised.buckets),
      );
      assert.equal(advised.receipts.calls, 1, 'the live call only');
      assert.equal(advised.aggregation, null, 'no live run recorded its seats’ answers');
      const controlled = await ask(control.strong.B);
      assert.deepEqual(
        controlled.runs.map((r) => r.batch_id),
        [liveRun],
      );
      assert.equal(
        controlled.buckets.reduce((n, b) => n + b.questions, 0),
        12,
      );
      // Which aggregation wins (issue 52 item 4): the live run's 12 questions recorded their seats' vote.
      assert.equal(controlled.aggregation?.questions, 12, JSON.stringify(controlled.aggregation));
      assert.ok(['vote', 'mode', 'unclear'].includes(controlled.aggregation.winner));
    } finally {
      await client.close();
    }
  });

  it('a test key’s run says simulated on the console’s runs pages and in the CLI’s run list and run watch', async () => {
    // A person's organisation, so its console shows the runs its keys launched.
    const visitor = new Visitor(apis.B);
    const name = `Evidence ${randomUUID().slice(0, 8)}`;
    await visitor.signUp({ email: `ev-${randomUUID().slice(0, 8)}@example.com`, password: 'correct horse battery staple', org: name });
    const orgId = ((await stack().db('organisations').where({ name }).first('id')) as { id: string }).id;
    await visitor.get('/console/overview');
    assert.equal((await visitor.post('/console/top-up', { amount_usd: '20' })).status, 302);
    const org: TestOrg = { orgId, ownerKey: await newKey(orgId), keyId: '' };
    const modes = await demoModes(orgId);
    const [simulatedRun, liveRun] = await Promise.all([
      ranToEnd(org, await newKey(orgId, { keyKind: 'test' }), modes.strong.B),
      ranToEnd(org, org.ownerKey, modes.weak.B),
    ]);

    const list = (await visitor.get('/console/runs')).body;
    const row = (id: string): string => new RegExp(`<tr data-run-id="${id}">([\\s\\S]*?)</tr>`).exec(list)?.[1] ?? '';
    assert.match(row(simulatedRun), /data-simulated="true"[^>]*>simulated</);
    assert.ok(row(liveRun).length > 0 && !row(liveRun).includes('data-simulated'), row(liveRun));
    const page = (await visitor.get(`/console/runs/${simulatedRun}`)).body;
    assert.match(page, /<title>Simulated test run of /);
    assert.match(page, /id="run-simulated"[^>]*>Simulated: a test key ran this on sim engines/);
    const livePage = (await visitor.get(`/console/runs/${liveRun}`)).body;
    assert.doesNotMatch(livePage, /run-simulated|Simulated test run/);

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-evidence-'));
    try {
      const listed = await quorumCli(['run', 'list', '--org', orgId, '--json'], dir);
      assert.equal(listed.code, 0, listed.stderr);
      const runs = (JSON.parse(listed.stdout) as { runs: { batch_id: string; simulated: boolean }[] }).runs;
      assert.deepEqual(
        runs.map((r) => [r.batch_id, r.simulated]).sort(),
        [
          [simulatedRun, true],
          [liveRun, false],
        ].sort(),
      );
      const text = await quorumCli(['run', 'list', '--org', orgId], dir);
      assert.match(text.stdout, new RegExp(`^${simulatedRun}  test +simulated `, 'm'));
      assert.match(text.stdout, new RegExp(`^${liveRun}  test +live `, 'm'));
      const temporal = { TEMPORAL_ADDRESS: stack().env.connection.options.address, TEMPORAL_NAMESPACE: stack().namespace };
      const watched = await quorumCli(['run', 'watch', simulatedRun], dir, temporal);
      assert.equal(watched.code, 0, watched.stderr);
      assert.match(watched.stdout, new RegExp(`^Simulated run ${simulatedRun} completed: `));
      assert.match(watched.stdout, /Simulated: a test key ran this on sim engines/);
      const watchedLive = await quorumCli(['run', 'watch', liveRun, '--json'], dir, temporal);
      assert.equal((JSON.parse(watchedLive.stdout) as { simulated: boolean }).simulated, false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a live run of an older version is not evidence for the current one', async () => {
    const org = await newOrg(50);
    const modes = await demoModes(org.orgId);
    const liveRun = await ranToEnd(org, org.ownerKey, modes.weak.B);
    // A new release of the mode: its panel changed, and the run measured the old one.
    const v1 = await findMode(stack().db, { orgId: org.orgId, form: 'A', model: modes.weak.A });
    assert.ok(v1);
    const v2 = await upsertMode(stack().db, {
      id: v1.id,
      ticker: v1.ticker,
      orgId: v1.orgId,
      name: v1.name,
      description: v1.description,
      useWhen: v1.useWhen,
      published: true,
      config: { ...v1.config, seatMaxOutputTokens: v1.config.seatMaxOutputTokens + 1 },
    });
    assert.equal(v2.version, v1.version + 1);
    assert.equal(
      ((await stack().db('runs').where({ id: liveRun }).first('mode_version')) as { mode_version: number }).mode_version,
      v1.version,
    );
    assert.deepEqual(await deliberationValue(org.ownerKey, modes.weak.B), heuristic());
  });

  it('a test key’s certification certifies no version for listing: published_version_uncertified', async () => {
    const org = await newOrg();
    const client = await connect(apis.B, org.ownerKey);
    const certification = (modeId: string, ticker: string, version: number, keyMode: 'live' | 'test') =>
      certifiedRow({ orgId: org.orgId, modeId, ticker, version, keyMode });
    try {
      const tool = async (name: string, args: Record<string, unknown>) => {
        const result = await client.callTool({ name, arguments: args });
        assert.ok(!result.isError, JSON.stringify(result));
        return json(result) as { mode_id: string; ticker: string; version: number; listing?: unknown };
      };
      const spec = { ...modeTemplate(), name: `Certified ${randomUUID().slice(0, 6)}`, ticker: 'CRTS' };
      const v1 = await tool('save_mode', { spec, release: true });
      assert.deepEqual((await tool('list_mode', { mode_id: v1.mode_id })).listing, { state: 'listed', version: 1 });
      await certification(v1.mode_id, v1.ticker, 1, 'live');
      const v2 = await tool('save_mode', { spec: { ...spec, rounds: 1 }, mode_id: v1.mode_id, release: true });
      assert.equal(v2.version, 2);
      // Certified at v2 on a test key (sim engines): v2 is still not the certified version.
      await certification(v1.mode_id, v1.ticker, 2, 'test');
      const refused = refusal(await client.callTool({ name: 'list_mode', arguments: { mode_id: v1.mode_id } }));
      assert.deepEqual([refused.code, refused.status], ['published_version_uncertified', 409]);
      // A live certification of v2 is what lets it be listed.
      await certification(v1.mode_id, v1.ticker, 2, 'live');
      assert.deepEqual((await tool('list_mode', { mode_id: v1.mode_id })).listing, { state: 'listed', version: 2 });
    } finally {
      await client.close();
    }
  });
});
