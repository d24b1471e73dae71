import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TRANSCRIPT_DELETED_NOTE } from '../../../domain/retention';
import { createLogger } from '../../../infra/log';
import { startAccountEventDispatch } from '../../../worker/account-events';
import { TASK_QUEUES } from '../../../workflows/task-queues';
import { call, FORMS, newKey, newOrg, PANEL, startApi, USER, type Api, type Reply } from '../api/helpers';
import { Visitor } from '../console/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { demoModes, untilEnded } from '../runs/helpers';
import { quorumCli } from '../../harness/cli';
import { stack } from '../../harness/stack';

/**
 * Issue 41 item 5: an organisation's transcripts are blanked past its retention (seat texts, answers, run answers)
 * while its money and every figure of the receipt stay, and `quorum audit` stays clean; with zero retention no text
 * of the call is in Postgres once it answered; `DELETE /v1/receipts/{id}/transcript` blanks one call's texts and
 * deletes its workflow's history from Temporal; `GET /v1/organization/export` is the organisation's rows as JSONL.
 * Every check reads Postgres directly.
 */

const PASSWORD = 'correct horse battery staple';
const DAY_MS = 86_400_000;

type Json = Record<string, unknown>;

interface ReceiptRow {
  gateway_micros: bigint;
  platform_fee_micros: bigint;
  mode_fee_micros: bigint;
  cap_credit_micros: bigint;
  billed_micros: bigint;
  prompt_tokens: number;
  completion_tokens: number;
  transcript_deleted_at: Date | null;
  outcome: { answer: string; money: Json; usage: Json; seatPasses: { content: string; tokensIn: number; realCostMicros: number }[] };
}

async function receiptRow(requestId: string): Promise<ReceiptRow> {
  return (await stack().db('receipts').where({ request_id: requestId }).first()) as ReceiptRow;
}

/** Everything a receipt bills and counts: what must not change when its texts go. */
function figures(r: ReceiptRow): Json {
  return {
    money: [r.gateway_micros, r.platform_fee_micros, r.mode_fee_micros, r.cap_credit_micros, r.billed_micros].map(String),
    tokens: [r.prompt_tokens, r.completion_tokens],
    outcomeMoney: r.outcome.money,
    usage: r.outcome.usage,
    seats: r.outcome.seatPasses.map((p) => [p.tokensIn, p.realCostMicros]),
  };
}

async function ledgerOf(orgId: string): Promise<string> {
  const rows = (await stack().db('ledger_entries').where({ org_id: orgId }).orderBy('id').select('kind', 'amount_micros')) as {
    kind: string;
    amount_micros: bigint;
  }[];
  return JSON.stringify(rows.map((r) => [r.kind, String(r.amount_micros)]));
}

const seatTexts = async (requestId: string): Promise<string[]> =>
  ((await stack().db('receipt_seats').where({ request_id: requestId }).select('content')) as { content: string }[]).map((r) => r.content);

/** Rows of every table of the schema whose text holds `marker`, by table. */
async function tablesHolding(marker: string): Promise<Record<string, number>> {
  const tables = (await stack()
    .db('information_schema.tables')
    .where({ table_schema: 'public', table_type: 'BASE TABLE' })
    .select('table_name')) as {
    table_name: string;
  }[];
  const found: Record<string, number> = {};
  for (const { table_name } of tables) {
    const { rows } = await stack().db.raw<{ rows: { n: number }[] }>(
      `select count(*)::int as n from "${table_name}" t where t::text like ?`,
      [`%${marker}%`],
    );
    if (rows[0].n > 0) found[table_name] = rows[0].n;
  }
  return found;
}

/** The request's workflow, as Temporal describes it until its history is deleted. */
async function workflowOf(requestId: string): Promise<string> {
  return ((await stack().db('requests').where({ id: requestId }).first('workflow_id')) as { workflow_id: string }).workflow_id;
}

/** Resolves once Temporal no longer has the workflow (a deletion completes asynchronously). */
async function untilHistoryGone(workflowId: string): Promise<void> {
  // The dev server's deletion took from 3 s to 20 s in this suite; two minutes is far past either.
  const until = Date.now() + 120_000;
  for (;;) {
    const gone = await stack()
      .env.client.workflow.getHandle(workflowId)
      .describe()
      .then(
        () => false,
        (err: unknown) => (err as { name?: string }).name === 'WorkflowNotFoundError',
      );
    if (gone) return;
    assert.ok(Date.now() < until, `the history of ${workflowId} was not deleted`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('accounts: transcript retention, deletion and export (issue 41 item 5)', function () {
  this.timeout(400_000);
  let workers: { stop(): Promise<void> };
  let sweep: { stop(): Promise<void> };
  const apis: Partial<Record<'A' | 'B', Api>> = {};
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-retention-'));

  before(async () => {
    workers = await startProductWorkers();
    // The worker's sweep, as worker/run.ts starts it: it deletes the histories of blanked calls from Temporal.
    sweep = startAccountEventDispatch(
      { db: stack().db, client: stack().env.client, log: createLogger('test-sweep', () => undefined) },
      { everyMs: 200, retryInitialMs: 200 },
    );
    apis.A = await startApi('A');
    apis.B = await startApi('B');
  });
  after(async () => {
    await apis.A?.close();
    await apis.B?.close();
    await sweep.stop();
    await workers.stop();
  });

  /** An owner who signed up in the console and set the retention there; a live owner's key for the API. */
  async function owner(api: Api, retentionDays: string): Promise<{ orgId: string; key: string }> {
    const org = `Retention ${randomUUID().slice(0, 8)}`;
    const visitor = new Visitor(api);
    await visitor.signUp({ email: `rt-${randomUUID().slice(0, 8)}@example.com`, password: PASSWORD, org });
    const row = (await stack().db('organisations').where({ name: org }).first('id')) as { id: string };
    await visitor.get('/console/alerts');
    const saved = await visitor.post('/console/alerts', {
      webhook_url: '',
      balance_low_usd: '0',
      transcript_retention_days: retentionDays,
    });
    assert.equal(saved.status, 302, saved.body.slice(0, 500));
    const page = await visitor.get('/console/alerts');
    assert.match(page.body, new RegExp(`Transcripts are kept ${retentionDays} day\\(s\\)`));
    return { orgId: row.id, key: await newKey(row.id, { isOwner: true }) };
  }

  async function ask(api: Api, key: string, form: 'A' | 'B', content: string, idem = randomUUID()): Promise<Reply> {
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: PANEL[form], messages: USER(content) },
      headers: { 'Idempotency-Key': idem },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r;
  }

  const requestIdOf = (r: Reply): string => String(r.body.svc?.request_id);
  const answerOf = (r: Reply): string => String((r.body.choices as { message: { content: string } }[])[0].message.content);

  async function upkeep(): Promise<void> {
    await stack().env.client.workflow.execute('accountUpkeepWorkflow', {
      taskQueue: TASK_QUEUES.deliberation,
      workflowId: `test-upkeep-${randomUUID()}`,
      args: [],
    });
  }

  async function auditClean(orgId: string): Promise<void> {
    const temporal = { TEMPORAL_ADDRESS: stack().env.address, TEMPORAL_NAMESPACE: stack().namespace };
    const run = await quorumCli(['audit', '--org', orgId, '--json'], dataDir, temporal);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { ok: true, temporal_checked: true, violations: [] });
  }

  for (const form of FORMS) {
    it(`past the retention the texts are blanked, the figures and the ledger kept, and the audit is clean (Form ${form})`, async () => {
      const api = apis[form] as Api;
      const o = await owner(api, '1');
      const reply = await ask(api, o.key, form, `Keep me a day ${randomUUID()}`);
      const requestId = requestIdOf(reply);
      assert.ok(answerOf(reply).length > 0);
      const kept = await receiptRow(requestId);
      assert.equal(kept.transcript_deleted_at, null);
      assert.ok(kept.outcome.answer.length > 0 && (await seatTexts(requestId)).every((t) => t.length > 0));
      const before = { figures: figures(kept), ledger: await ledgerOf(o.orgId) };
      const shownBefore = (await call(api, 'GET', `/v1/receipts/${requestId}`, { key: o.key })).body.receipt as Json;

      // A run's answers too (Form B's test run, on a test key's simulated engines).
      const modes = await demoModes(o.orgId);
      const testKey = await newKey(o.orgId, { keyKind: 'test' });
      const launched =
        form === 'B'
          ? await call(api, 'POST', '/v1/tests', { key: testKey, body: { model: modes.strong.B, questions: { easy: 1 } } })
          : undefined;
      if (launched) {
        assert.equal(launched.status, 200, JSON.stringify(launched.body));
        await untilEnded(api, testKey, 'tests', launched.body.batch_id as string);
      }

      if (launched) {
        const answered = (await stack()
          .db('run_questions')
          .where({ run_id: launched.body.batch_id as string })
          .select('result')) as {
          result: { modeAnswer: string };
        }[];
        assert.ok(answered.length === 1 && answered[0].result.modeAnswer.length > 0, 'kept within the retention');
      }

      // A day passes for the call and the run's questions, then the upkeep's pass.
      await upkeep();
      assert.equal((await receiptRow(requestId)).transcript_deleted_at, null, 'not before its retention');
      await stack()
        .db('receipts')
        .where({ request_id: requestId })
        .update({ completed_at: new Date(Date.now() - 2 * DAY_MS) });
      if (launched)
        await stack()
          .db('run_questions')
          .where({ run_id: launched.body.batch_id as string })
          .update({ completed_at: new Date(Date.now() - 2 * DAY_MS) });
      await upkeep();

      const gone = await receiptRow(requestId);
      assert.ok(gone.transcript_deleted_at instanceof Date);
      await untilHistoryGone(await workflowOf(requestId));
      assert.equal(gone.outcome.answer, '');
      assert.ok(gone.outcome.seatPasses.every((p) => p.content === ''));
      assert.deepEqual(new Set(await seatTexts(requestId)), new Set(['']));
      assert.deepEqual({ figures: figures(gone), ledger: await ledgerOf(o.orgId) }, before);
      if (launched) {
        const questions = (await stack()
          .db('run_questions')
          .where({ run_id: launched.body.batch_id as string })
          .select('result', 'answers_deleted_at')) as {
          result: { modeAnswer: string; baselineAnswer: string; modeCorrect: boolean };
          answers_deleted_at: Date | null;
        }[];
        assert.equal(questions.length, 1);
        assert.deepEqual([questions[0].result.modeAnswer, questions[0].result.baselineAnswer], ['', '']);
        assert.equal(typeof questions[0].result.modeCorrect, 'boolean');
        assert.ok(questions[0].answers_deleted_at instanceof Date);
      }

      // The receipt: the same figures, no text, and a note saying why.
      const shown = (await call(api, 'GET', `/v1/receipts/${requestId}?include_transcript=true`, { key: o.key })).body.receipt as Json;
      const note = shown.transcript_deleted as Json;
      assert.deepEqual([note.reason, note.note], ['retention', TRANSCRIPT_DELETED_NOTE.retention]);
      assert.equal(shown.billed_usd, shownBefore.billed_usd);
      assert.deepEqual([shown.prompt_tokens, shown.completion_tokens], [shownBefore.prompt_tokens, shownBefore.completion_tokens]);
      assert.ok((shown.seats as Json[]).every((s) => s.content === ''));
      await auditClean(o.orgId);
    });

    it(`zero retention: the caller gets the answer, and no text of the call is in Postgres after it (Form ${form})`, async () => {
      const api = apis[form] as Api;
      const o = await owner(api, '0');
      const marker = `zr${randomUUID().replaceAll('-', '')}`;
      const idem = randomUUID();
      const reply = await ask(api, o.key, form, `Repeat this word: ${marker}. Why is the sky blue?`, idem);
      assert.ok(answerOf(reply).length > 0, 'the answer is in the response');
      const requestId = requestIdOf(reply);
      // A response's instructions are text of the prompt too.
      const response = await call(api, 'POST', '/v1/responses', {
        key: o.key,
        body: { model: PANEL[form], instructions: `Answer as ${marker}-instructions`, input: `Why ${marker}-input?` },
      });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.deepEqual(await tablesHolding(marker), {}, 'the prompt and the answers are nowhere in Postgres');
      // Nor, within seconds, in Temporal: the call's workflow history (its input holds the prompt) is deleted.
      await untilHistoryGone(await workflowOf(requestId));
      const row = await receiptRow(requestId);
      assert.ok(row.billed_micros > 0n, 'billed as ever');
      assert.ok(row.transcript_deleted_at instanceof Date);

      const receipt = (await call(api, 'GET', `/v1/receipts/${requestId}?include_transcript=true`, { key: o.key })).body.receipt as Json;
      assert.equal((receipt.transcript_deleted as Json).reason, 'zero_retention');
      assert.equal(receipt.billed_usd, (reply.body.svc as Json).billed_usd);
      // A replay of the call: its figures, with the note that the text is gone.
      const again = await ask(api, o.key, form, `Repeat this word: ${marker}. Why is the sky blue?`, idem);
      const replayNote = (again.body.svc as Json).transcript_deleted as Json | undefined;
      assert.equal(replayNote?.note, TRANSCRIPT_DELETED_NOTE.zero_retention);

      // A run's answers are blanked as each question is recorded (its verdicts kept).
      const modes = await demoModes(o.orgId);
      const testKey = await newKey(o.orgId, { keyKind: 'test' });
      const launched = await call(api, 'POST', '/v1/tests', {
        key: testKey,
        body: form === 'B' ? { model: modes.strong.B, questions: { easy: 1 } } : { model: modes.strong.A, buckets: { light: 1 } },
      });
      assert.equal(launched.status, 200, JSON.stringify(launched.body));
      await untilEnded(api, testKey, 'tests', launched.body.batch_id as string);
      const questions = (await stack()
        .db('run_questions')
        .where({ run_id: launched.body.batch_id as string })
        .select('result', 'answers_deleted_at')) as {
        result: { modeAnswer: string; baselineAnswer: string; modeCorrect: boolean };
        answers_deleted_at: Date | null;
      }[];
      assert.equal(questions.length, 1);
      assert.deepEqual([questions[0].result.modeAnswer, questions[0].result.baselineAnswer], ['', '']);
      assert.equal(typeof questions[0].result.modeCorrect, 'boolean');
      assert.ok(questions[0].answers_deleted_at instanceof Date);
      await auditClean(o.orgId);
    });
  }

  for (const form of FORMS) {
    it(`DELETE /v1/receipts/{id}/transcript: 404 for another organisation; the owner blanks it and its history leaves Temporal (Form ${form})`, async () => {
      const api = apis[form] as Api;
      const mine = await newOrg();
      const theirs = await newOrg();
      const reply = await ask(api, mine.ownerKey, form, `Delete me ${randomUUID()}`);
      const requestId = requestIdOf(reply);
      const before = figures(await receiptRow(requestId));
      const stranger = await call(api, 'DELETE', `/v1/receipts/${requestId}/transcript`, { key: theirs.ownerKey });
      assert.equal(stranger.status, 404);
      assert.deepEqual([stranger.body.error?.code, stranger.body.error?.param], ['receipt_not_found', 'request_id']);
      assert.ok((await receiptRow(requestId)).outcome.answer.length > 0, 'untouched by the refused delete');
      assert.equal((await call(api, 'DELETE', `/v1/receipts/req_${randomUUID()}/transcript`, { key: mine.ownerKey })).status, 404);

      const { workflow_id: workflowId } = (await stack().db('requests').where({ id: requestId }).first('workflow_id')) as {
        workflow_id: string;
      };
      assert.equal((await stack().env.client.workflow.getHandle(workflowId).describe()).status.name, 'COMPLETED');
      const deleted = await call(api, 'DELETE', `/v1/receipts/${requestId}/transcript`, { key: mine.ownerKey });
      assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
      assert.deepEqual(deleted.body, { request_id: requestId, object: 'transcript', deleted: true });
      const row = await receiptRow(requestId);
      assert.equal(row.outcome.answer, '');
      assert.deepEqual(new Set(await seatTexts(requestId)), new Set(['']));
      assert.deepEqual(figures(row), before);
      const receipt = (await call(api, 'GET', `/v1/receipts/${requestId}`, { key: mine.ownerKey })).body.receipt as Json;
      assert.equal((receipt.transcript_deleted as Json).reason, 'deleted');
      await untilHistoryGone(workflowId);
      await auditClean(mine.orgId);
    });

    it(`GET /v1/organization/export: JSONL of the organisation's rows, none of another's, no secret; the owner's key only (Form ${form})`, async () => {
      const api = apis[form] as Api;
      const mine = await newOrg();
      const theirs = await newOrg();
      const myCall = requestIdOf(await ask(api, mine.ownerKey, form, `Export me ${randomUUID()}`));
      const theirCall = requestIdOf(await ask(api, theirs.ownerKey, form, `Not me ${randomUUID()}`));
      const res = await fetch(`${api.url}/v1/organization/export`, { headers: { authorization: `Bearer ${mine.ownerKey}` } });
      assert.equal(res.status, 200);
      assert.match(String(res.headers.get('content-type')), /^application\/jsonl/);
      const text = await res.text();
      const lines = text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Json);
      const objects = new Set(lines.map((l) => l.object));
      for (const o of ['organization', 'balance', 'ledger_entry', 'api_key', 'request', 'receipt', 'receipt_seat'])
        assert.ok(objects.has(o), `has ${o}: ${[...objects].join(', ')}`);
      assert.ok(lines.every((l) => l.org_id === undefined || l.org_id === mine.orgId));
      assert.deepEqual(
        lines.filter((l) => l.object === 'organization').map((l) => l.id),
        [mine.orgId],
      );
      assert.ok(lines.some((l) => l.object === 'receipt' && l.request_id === myCall));
      assert.equal(lines.filter((l) => l.object === 'receipt_seat').length, (await seatTexts(myCall)).length);
      assert.ok(!text.includes(theirs.orgId) && !text.includes(theirCall), "nothing of the other organisation's");
      assert.ok(lines.filter((l) => l.object === 'api_key').every((l) => !('key_hash' in l)));
      assert.ok(!text.includes(mine.ownerKey), 'no key in the clear');
      const notOwner = await call(api, 'GET', '/v1/organization/export', { key: await newKey(mine.orgId) });
      assert.equal(notOwner.status, 403);
    });
  }
});
