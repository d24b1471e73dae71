import type { AnswerOptions } from '../../../domain/answer-options';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { canonicalHash } from '../../../domain/canonical-json';
import assert from 'node:assert/strict';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { workflowIds } from '../../../domain/workflow-ids';
import { conductDeliberation, type DeliberationRequest } from '../../../operations/deliberation';
import { countMessagesTokens } from '../../../domain/tokens';
import { callCeilingMicros } from '../../../domain/fees';
import type { ModeConfig, ModeRecord, Tier } from '../../../domain/modes';
import type { Outcome } from '../../../domain/outcome';
import type { Db } from '../../../db/knex';
import { getBalance, listLedger, type Balance } from '../../../db/repositories/ledger';
import { claimRequest } from '../../../db/repositories/requests';
import { findMode, upsertMode } from '../../../db/repositories/modes';
import { createOrganisation } from '../../../db/repositories/organisations';
import { createLogger } from '../../../infra/log';
import { createWorkers, type WorkerOptions } from '../../../worker/workers';
import { historiesDir } from '../../harness/histories';
import { OPENAI_TEST_KEY, startOpenAiLoopback, type Loopback, type Script } from '../../fixtures/providers';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';
import { deliberationWorkflow, type DeliberationInput } from '../../../workflows/deliberation';
import { TASK_QUEUES } from '../../../workflows/task-queues';
import { entrySettingsOf } from '../../harness/settings';

/** Where in-process workers run: the shared test stack by default, or a stack of a test's own (isolated-stack.ts). */
export interface WorkerTarget {
  nativeConnection: NativeConnection;
  namespace: string;
  db: Db;
}

/**
 * The product's own workers on the test server, with engines configured from `env` (loopback providers or none);
 * `logTo` receives their log lines (default: dropped); `slots` sizes them as QUORUM_MAX_CACHED_WORKFLOWS and
 * QUORUM_MIN_WORKFLOW_SLOTS do (default: createWorkers' own).
 */
export async function startProductWorkers(
  env: NodeJS.ProcessEnv = {},
  on?: WorkerTarget,
  logTo: (line: string) => void = () => undefined,
  slots: Pick<WorkerOptions, 'maxCachedWorkflows' | 'workflowSlots'> = {},
): Promise<{ stop(): Promise<void> }> {
  const { nativeConnection, namespace, db } = on ?? { ...stack(), nativeConnection: stack().env.nativeConnection };
  const log = createLogger('test-worker', logTo);
  const workers: Worker[] = await createWorkers({
    connection: nativeConnection,
    namespace,
    deps: { db, log, ...entrySettingsOf(env, log) },
    ...slots,
  });
  const running = Promise.all(workers.map((w) => w.run()));
  return {
    stop: async () => {
      for (const w of workers) w.shutdown();
      await running;
    },
  };
}

/**
 * For a describe block: a loopback speaking OpenAI's chat completions by `script`, and the product's workers with the
 * service's OpenAI key pointed at it. Returns the loopback (its recorded requests), there once the block's hooks ran.
 */
export function withOpenAiLoopback(script: Script): () => Loopback {
  let openai: Loopback | undefined;
  let workers: { stop(): Promise<void> } | undefined;
  before(async () => {
    openai = await startOpenAiLoopback(script);
    workers = await startProductWorkers({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
  });
  after(async () => {
    await workers?.stop();
    await openai?.close();
  });
  return () => {
    if (!openai) throw new Error('the loopback starts in the block’s before hook');
    return openai;
  };
}

export async function newOrg(creditUsd = 100): Promise<{ orgId: string; keyId: string }> {
  const org = await createOrganisation(stack().db, {
    name: `Org ${randomUUID().slice(0, 8)}`,
    creditMicros: BigInt(creditUsd * 1_000_000),
  });
  return { orgId: org.orgId, keyId: org.keyId };
}

export async function systemMode(id: string): Promise<ModeRecord> {
  const mode = await findMode(stack().db, { orgId: 'none', form: 'A', model: id });
  if (!mode) throw new Error(`system mode ${id} not seeded`);
  return mode;
}

/** An organisation's own mode, derived from a system mode with some settings changed. */
export async function customMode(orgId: string, base: string, change: Partial<ModeConfig>): Promise<ModeRecord> {
  const from = await systemMode(base);
  return upsertMode(stack().db, {
    id: `${base}-${randomUUID().slice(0, 8)}`,
    ticker: uniqueTicker('TEST'),
    orgId,
    name: `${from.name} (test)`,
    description: null,
    useWhen: from.useWhen,
    published: true,
    config: { ...from.config, ...change },
  });
}

export interface Call {
  org: { orgId: string; keyId: string };
  mode: ModeRecord;
  content?: string;
  form?: 'A' | 'B';
  tier?: Tier;
  keyMode?: 'live' | 'test';
  ceilingMicros?: number;
  idempotencyKey?: string;
  /** What the caller asks of the answer (its structure, limit, sampling, answer kind), as the API hands it on. */
  answer?: AnswerOptions;
}

/** One call through the API's path; `record` names its history for the replay test, whether it succeeds or fails. */
export async function deliberate(c: Call, record?: string): Promise<{ outcome: Outcome; replayed: boolean }> {
  const idempotencyKey = c.idempotencyKey ?? randomUUID();
  try {
    return await deliberateOnce({ ...c, idempotencyKey });
  } finally {
    if (record) await recordHistory(record, workflowIds.deliberation(c.org.orgId, idempotencyKey));
  }
}

function deliberateOnce(c: Call & { idempotencyKey: string }): Promise<{ outcome: Outcome; replayed: boolean }> {
  const form = c.form ?? 'B';
  const messages = [
    { role: 'user' as const, content: c.content ?? 'Explain why the sky is blue and compare Rayleigh with Mie scattering, step by step.' },
  ];
  const input: DeliberationRequest = {
    orgId: c.org.orgId,
    apiKeyId: c.org.keyId,
    keyKind: c.keyMode ?? 'live',
    idempotencyKey: c.idempotencyKey,
    fingerprint: canonicalHash({ model: c.mode.id, messages }),
    form,
    mode: c.mode,
    model: form === 'A' ? c.mode.id : c.mode.ticker,
    tier: c.tier ?? 'plus',
    messages,
    promptTokens: countMessagesTokens(messages),
    ceilingMicros: c.ceilingMicros ?? callCeilingMicros(form, c.mode.config, undefined, undefined),
    ...(c.answer && { options: { answer: c.answer } }),
  };
  return conductDeliberation({ db: stack().db, client: stack().env.client }, input);
}

/**
 * With QUORUM_RECORD_HISTORIES=1, saves the run's event history (protobuf) under test/histories/, where the replay test
 * (replay.test.ts) finds it: a later change that breaks the workflow's determinism then fails CI.
 */
export async function recordHistory(name: string, workflowId: string, runId?: string): Promise<void> {
  if (process.env.QUORUM_RECORD_HISTORIES !== '1') return;
  const history = await stack().env.client.workflow.getHandle(workflowId, runId).fetchHistory();
  fs.mkdirSync(historiesDir, { recursive: true });
  fs.writeFileSync(path.join(historiesDir, `${name}.pb`), temporal.api.history.v1.History.encode(history).finish());
  // A workflow that derives ids from its own (a run's question children) replays only under that id.
  fs.writeFileSync(path.join(historiesDir, `${name}.id`), workflowId);
}

/** The sum of the organisation's ledger entries: it must always equal the balance. `db`: another stack's database. */
export async function ledgerSum(orgId: string, db: Db = stack().db): Promise<bigint> {
  // Summed in Postgres over every entry: a page of the latest 1000 left out the first credit once the cluster test's
  // load wrote more.
  const row = (await db('ledger_entries').where({ org_id: orgId }).first(db.raw('coalesce(sum(amount_micros), 0)::text as total'))) as {
    total: string;
  };
  return BigInt(row.total);
}

/** A request's state in Postgres, once the API has recorded it. `db`: another stack's database. */
export async function requestState(orgId: string, idempotencyKey: string, db: Db = stack().db): Promise<string | undefined> {
  const row = await db('requests').where({ org_id: orgId, idempotency_key: idempotencyKey }).whereNull('superseded_at').first('state');
  return row?.state as string | undefined;
}

/**
 * The entries one request or run wrote, oldest first: read by its id, not from a page of the organisation's latest
 * entries (a run charged up front falls out of any fixed page while load goes on beside it).
 */
export async function requestLedger(orgId: string, requestId: string, db: Db = stack().db): Promise<{ kind: string; amount: bigint }[]> {
  const rows = (await db('ledger_entries')
    .where({ org_id: orgId, request_id: requestId })
    .orderBy('id')
    .select('kind', 'amount_micros')) as {
    kind: string;
    amount_micros: bigint;
  }[];
  return rows.map((r) => ({ kind: r.kind, amount: r.amount_micros }));
}

/** How many charges the organisation's ledger holds. `db`: another stack's database. */
export async function chargeCount(orgId: string, db: Db = stack().db): Promise<number> {
  return (await listLedger(db, orgId, Number.MAX_SAFE_INTEGER, { kinds: ['charge'] })).length;
}

/**
 * Each of `requestIds` charged exactly once and nothing else charged; nothing still held; the entries summing to the
 * balance. `db`: another stack's database.
 */
export async function assertEachBilledOnce(orgId: string, requestIds: readonly string[], db: Db = stack().db): Promise<void> {
  // Every charge: a page of the 1000 latest entries of every kind left out the first charges of the cluster test's
  // load (hundreds of calls, a hold, a charge and a release each) on a busy machine.
  const charged = (await listLedger(db, orgId, Number.MAX_SAFE_INTEGER, { kinds: ['charge'] })).map((e) => e.requestId);
  assert.deepEqual([...charged].sort(), [...requestIds].sort());
  const balance = await getBalance(db, orgId);
  assert.equal(balance.reservedMicros, 0n);
  assert.equal(await ledgerSum(orgId, db), balance.balanceMicros);
}

/**
 * The call ended without an answer: balance and hold as before (a reservation may have been made and released),
 * nothing charged, the ledger still summing to the balance; with `failedWith`, its request is failed with that code.
 */
export async function assertNothingBilled(orgId: string, before: Balance, failedWith?: string): Promise<void> {
  const { db } = stack();
  assert.deepEqual(await getBalance(db, orgId), before);
  assert.equal(await ledgerSum(orgId), before.balanceMicros);
  assert.equal(await chargeCount(orgId), 0);
  if (failedWith === undefined) return;
  const request = await db('requests').where({ org_id: orgId }).orderBy('created_at', 'desc').first();
  assert.deepEqual([request.state, request.error_code], ['failed', failedWith]);
}

/** Runs the deliberation workflow directly and expects its hold to refuse it with `code`, billing nothing. */
/**
 * A call the API admitted (its request claimed, as `conductDeliberation` does) whose workflow then meets a hold that is
 * refused: `call` is what differs between such tests; the rest of the workflow's input is fixed. Returns the
 * request's id.
 */
export async function assertHoldRefused(
  call: Pick<DeliberationInput, 'orgId' | 'mode' | 'tier' | 'ceilingMicros' | 'payer'> & { apiKeyId: string },
  before: Balance,
  code: string,
): Promise<string> {
  const requestId = `req_hold_${randomUUID()}`;
  const workflowId = workflowIds.deliberation(call.orgId, requestId);
  const claim = { id: requestId, orgId: call.orgId, apiKeyId: call.apiKeyId, idempotencyKey: requestId, workflowId, fingerprint: 'f' };
  await claimRequest(stack().db, { ...claim, modeId: call.mode.id, model: call.mode.id }, { takeOver: [] });
  const messages = [{ role: 'user' as const, content: 'Compare two sorting algorithms step by step. Why? How?' }];
  const input: DeliberationInput = {
    requestId,
    orgId: call.orgId,
    keyMode: 'live',
    form: 'B',
    mode: call.mode,
    tier: call.tier,
    messages,
    promptTokens: countMessagesTokens(messages),
    ceilingMicros: call.ceilingMicros,
    payer: call.payer,
    createdAt: new Date().toISOString(),
  };
  await assert.rejects(
    stack().env.client.workflow.execute(deliberationWorkflow, { taskQueue: TASK_QUEUES.deliberation, workflowId, args: [input] }),
    (e: unknown) => {
      assert.ok(e instanceof WorkflowFailedError && e.cause instanceof ApplicationFailure);
      assert.equal(e.cause.type, code);
      return true;
    },
  );
  await assertNothingBilled(input.orgId, before, code);
  return requestId;
}

/**
 * Runs `work` while Postgres refuses every receipt of this organisation: a real integrity failure (a CHECK
 * constraint), scoped to the one organisation so no other test meets it.
 */
export async function withReceiptsRefused<T>(orgId: string, work: () => Promise<T>): Promise<T> {
  const { db } = stack();
  const constraint = `refuse_${orgId.toLowerCase()}`;
  // DDL takes no bind parameters; the id is `org_` + base62, quoted as a literal all the same.
  await db.raw(`alter table receipts add constraint ?? check (org_id <> '${orgId.replace(/'/g, "''")}') not valid`, [constraint]);
  try {
    return await work();
  } finally {
    await db.raw('alter table receipts drop constraint ??', [constraint]);
  }
}
