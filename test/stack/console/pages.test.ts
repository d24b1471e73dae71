import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getRun } from '../../../db/repositories/runs';
import { SCOPES } from '../../../domain/api-keys';
import { BUCKET_NAMES } from '../../../domain/form';
import { BUCKETS } from '../../../domain/questions/types';
import type { ResultGroup } from '../../../domain/run-summary';
import { verdictFor } from '../../../domain/statistics';
import { call, startApi, USER, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { demoModes } from '../runs/helpers';
import { Visitor } from './helpers';

/**
 * The receipts and runs pages over HTTP: a call made with a key issued in the console shows up with its seats and
 * cost; a small test run shows its progress while it runs and, once completed, a chart whose whiskers are the
 * summary's intervals; another organisation sees neither.
 */

const PASSWORD = 'correct horse battery staple';

interface Member {
  visitor: Visitor;
  orgId: string;
}

async function member(api: Api): Promise<Member> {
  const org = `Pages ${randomUUID().slice(0, 8)}`;
  const visitor = new Visitor(api);
  await visitor.signUp({ email: `p-${randomUUID().slice(0, 8)}@example.com`, password: PASSWORD, org });
  const row = (await stack().db('organisations').where({ name: org }).first('id')) as { id: string };
  return { visitor, orgId: row.id };
}

const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const decode = (text: string): string => text.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]);

/** The attributes of each `<tag …>` in the markup, whatever their order and the whitespace between them. */
function startTags(markup: string, tag: string): Record<string, string>[] {
  return [...markup.matchAll(new RegExp(`<${tag}\\s([^>]*)>`, 'g'))].map((m) =>
    Object.fromEntries([...m[1].matchAll(/([\w:-]+)="([^"]*)"/g)].map((a) => [a[1], decode(a[2])])),
  );
}

function tagWith(markup: string, tag: string, attr: string, value: string): Record<string, string> | undefined {
  return startTags(markup, tag).find((a) => a[attr] === value);
}

/** The text of each cell of the table row carrying `attr="value"`, tags stripped and whitespace collapsed. */
function rowCells(markup: string, attr: string, value: string): string[] | undefined {
  const row = new RegExp(`<tr ${attr}="${value}">([\\s\\S]*?)</tr>`).exec(markup)?.[1];
  if (row === undefined) return undefined;
  const text = (cell: string): string =>
    decode(
      cell
        .replace(/<[^>]*>/g, '')
        .replace(/\s+/g, ' ')
        .trim(),
    );
  return [...row.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => text(c[1]));
}

/** An element's markup from its start tag to the end tag that closes it (no nesting of the same tag). */
function element(markup: string, tag: string, id: string): string {
  return new RegExp(`<${tag}\\s[^>]*\\bid="${id}"[\\s\\S]*?</${tag}>`).exec(markup)?.[0] ?? '';
}

describe('console: receipts and run pages', function () {
  this.timeout(60_000);
  let workers: { stop(): Promise<void> };
  let api: Api;
  let owner: Member;
  let stranger: Member;
  let key: string;
  let modes: Awaited<ReturnType<typeof demoModes>>;

  before(async () => {
    // Sim engines that take a moment, so a run is seen live before it ends.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:300' });
    api = await startApi('B');
    [owner, stranger] = await Promise.all([member(api), member(api)]);
    modes = await demoModes(owner.orgId);
    await owner.visitor.get('/console/overview');
    assert.equal((await owner.visitor.post('/console/top-up', { amount_usd: '20' })).status, 302);
    await owner.visitor.get('/console/keys');
    const created = await owner.visitor.post('/console/keys', { kind: 'live', scopes: [...SCOPES] });
    key = /qrm_live_[0-9A-Za-z]{32}/.exec(created.body)?.[0] ?? '';
    assert.ok(key, created.body.slice(0, 2000));
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('lists a call with its seats and cost, shows its receipt, and hides it from another organisation', async () => {
    const reply = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: modes.strong.B, messages: USER('What is 17 times 23?') },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const requestId = String(reply.body.svc?.request_id);
    const billed = `$${Number(reply.body.svc?.billed_usd).toFixed(4)}`;

    const list = await owner.visitor.get('/console/receipts');
    assert.equal(list.status, 200);
    assert.ok(element(list.body, 'table', 'receipts-table').includes(`href="/console/receipts/${requestId}"`), 'listed in #receipts-table');
    const [, mode, lane, tier, status, seats, fallbacks, cost] = rowCells(list.body, 'data-request-id', requestId) ?? [];
    assert.deepEqual(
      [mode, lane, tier, status, seats, fallbacks, cost],
      [modes.strong.B, 'panel', 'plus', 'succeeded', '3 of 3', '0', billed],
    );

    const detail = await owner.visitor.get(`/console/receipts/${requestId}`);
    assert.equal(detail.status, 200);
    assert.equal(tagWith(detail.body, 'div', 'id', 'receipt-detail')?.['data-request-id'], requestId);
    const seatTable = element(detail.body, 'table', 'seat-passes');
    for (const seat of ['seat1', 'seat2', 'seat3']) assert.match(seatTable, new RegExp(`<td>${seat}</td>`));
    assert.match(seatTable, /<span class="ok">best<\/span>/, 'the best seat is marked');
    assert.match(seatTable, /<code>sim\//, 'the engine each seat used');
    assert.match(element(detail.body, 'td', 'receipt-billed'), new RegExp(`<strong>\\${billed}</strong>`));
    const latencies = tagWith(detail.body, 'svg', 'id', 'seat-latency-chart');
    assert.equal(latencies?.role, 'img');
    assert.match(latencies['aria-label'], /^Latency of each seat pass: seat1 round 1 \d/);
    assert.match(detail.body, /The judge's verdict/);

    assert.equal((await stranger.visitor.get(`/console/receipts/${requestId}`)).status, 404);
    assert.doesNotMatch((await stranger.visitor.get('/console/receipts')).body, new RegExp(requestId));
    assert.equal((await owner.visitor.get('/console/receipts/req_not_a_call')).status, 404);
  });

  it("shows a run live, then its win rate per bucket with the summary's intervals; another organisation gets 404", async () => {
    const launched = await call(api, 'POST', '/v1/tests', {
      key,
      body: { model: modes.strong.B, questions: { easy: 2, medium: 2, hard: 1 } },
    });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const runId = String(launched.body.batch_id);
    const href = `/console/runs/${runId}`;

    const live = await owner.visitor.get(href);
    assert.equal(live.status, 200);
    const container = tagWith(live.body, 'div', 'id', 'run-progress');
    assert.match(container?.['data-state'] ?? '', /^(queued|running|judging)$/);
    assert.equal(container?.['hx-get'], `${href}/progress`);
    assert.equal(container['hx-trigger'], 'every 2s');
    for (const [name, total] of [
      ['easy', '2'],
      ['medium', '2'],
      ['hard', '1'],
      ['all', '5'],
    ]) {
      assert.equal(tagWith(live.body, 'div', 'data-bucket', name)?.['data-total'], total, `a bar for ${name}`);
      assert.equal(startTags(live.body, 'progress').find((p) => p['aria-label'].startsWith(`${name}: `))?.max, total);
    }
    assert.match(live.body, /not started yet; about [^<]+ once it starts|elapsed [^,<]+, about [^<]+ left/);
    assert.ok(tagWith(live.body, 'button', 'id', 'cancel-run'), 'a live run can be cancelled');
    assert.equal(tagWith(live.body, 'svg', 'id', 'win-rate-chart'), undefined);

    // As htmx does: poll the fragment until it comes back without its trigger.
    let fragment = '';
    for (const until = Date.now() + 40_000; Date.now() < until; await new Promise((r) => setTimeout(r, 500))) {
      const f = await owner.visitor.get(`${href}/progress`, { 'hx-request': 'true' });
      assert.equal(f.status, 200);
      fragment = f.body;
      if (!fragment.includes('hx-trigger')) break;
    }
    assert.match(fragment, /^<div id="run-progress"/, 'a fragment, not a page');
    const ended = tagWith(fragment, 'div', 'id', 'run-progress');
    assert.equal(ended?.['data-state'], 'completed');
    assert.equal(ended['hx-get'], undefined, 'polling stops');
    assert.deepEqual(
      [tagWith(fragment, 'div', 'data-bucket', 'all')?.['data-done'], tagWith(fragment, 'div', 'data-bucket', 'all')?.['data-total']],
      ['5', '5'],
    );

    const run = await getRun(stack().db, runId);
    assert.equal(run.state, 'completed');
    const summary = run.summary;
    assert.ok(summary);
    const done = await owner.visitor.get(href);
    const svg = element(done.body, 'svg', 'win-rate-chart');
    const chart = tagWith(done.body, 'svg', 'id', 'win-rate-chart');
    assert.equal(chart?.role, 'img');
    // Each launch draws fresh questions (a random seed), so two easy ones may both be won: 1.000 is a win rate too.
    assert.match(chart['aria-label'], /^Win rate against the baseline with 95% intervals: easy (0\.\d{3}|1\.000) \[/);
    assert.match(svg, /<title>Win rate against the baseline/);
    const reference = tagWith(svg, 'line', 'class', 'reference');
    assert.equal(reference?.['stroke-dasharray'], '5 4', 'dashed');
    const [axis] = startTags(svg, 'line');
    assert.equal(Number(reference.x1), (Number(axis.x1) + Number(axis.x2)) / 2, 'at one half of the axis');
    const plotted = startTags(svg, 'g').filter((g) => g.class === 'interval');
    const expected: [string, ResultGroup][] = [
      ...BUCKETS.map((b): [string, ResultGroup] => [BUCKET_NAMES.B[b], summary.perBucket[b]]),
      ['overall', summary.overall],
    ];
    assert.deepEqual(
      plotted.map((g) => g['data-label']),
      expected.map(([label]) => label),
    );
    for (const [label, group] of expected) {
      const w = group.winRate;
      assert.ok(w, `${label} has verdicts`);
      const g = plotted.find((p) => p['data-label'] === label);
      assert.deepEqual(
        [g?.['data-estimate'], g?.['data-low'], g?.['data-high']].map(Number),
        [w.winRate, w.interval.low, w.interval.high],
        `the whisker of ${label} is the summary's interval`,
      );
      const cells = rowCells(element(done.body, 'table', 'win-rate-table'), 'data-bucket', label);
      assert.deepEqual(
        cells?.slice(3, 6),
        [w.winRate, w.interval.low, w.interval.high].map((x) => x.toFixed(3)),
        `the table for ${label}`,
      );
    }
    assert.match(done.body, /Accuracy against the known answers: the mode \d/);
    assert.equal(tagWith(done.body, 'button', 'id', 'cancel-run'), undefined, 'nothing to cancel once it ended');

    // A certification reads the same summary with its verdict: this run's row as one (150 questions take minutes).
    const verdict = verdictFor(summary.overall.winRate?.interval.low ?? 0);
    const certId = randomUUID();
    const row = (await stack().db('runs').where({ id: runId }).first()) as Record<string, unknown>;
    await stack()
      .db('runs')
      .insert({
        ...row,
        id: certId,
        kind: 'certification',
        idempotency_key: certId,
        workflow_id: `cert/${certId}`,
        spec: JSON.stringify(row.spec),
        summary: JSON.stringify({ ...summary, verdict }),
        // A row, not a run: nothing charged for it (the suite's audit reads it).
        billed_micros: 0,
        refunded_micros: 0,
      });
    const cert = await owner.visitor.get(`/console/runs/${certId}`);
    assert.equal(tagWith(cert.body, 'div', 'id', 'certification-verdict')?.['data-verdict'], verdict);
    assert.match(
      cert.body.replace(/\s+/g, ' '),
      new RegExp(`Lower bound of the 95% interval: <strong>${summary.overall.winRate?.interval.low.toFixed(3)}</strong>`),
    );
    assert.equal(startTags(cert.body, 'li').filter((li) => li['aria-current'] === 'true').length, 1, 'one rung of the ladder reached');
    assert.ok(tagWith(cert.body, 'svg', 'id', 'win-rate-chart'));

    const list = await owner.visitor.get('/console/runs');
    const [, kind, model, state, progress] = rowCells(list.body, 'data-run-id', runId) ?? [];
    assert.deepEqual([kind, model, state, progress], ['Test run', modes.strong.B, 'completed', '5/5']);

    for (const path of [href, `${href}/progress`]) assert.equal((await stranger.visitor.get(path)).status, 404, path);
    await stranger.visitor.get('/console/runs');
    assert.equal((await stranger.visitor.post(`${href}/cancel`, {})).status, 404);
    assert.doesNotMatch((await stranger.visitor.get('/console/runs')).body, new RegExp(runId));
  });
  it("cancels a live run from its page, with the form's CSRF token", async () => {
    const launched = await call(api, 'POST', '/v1/tests', { key, body: { model: modes.strong.B, questions: { easy: 3 } } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const href = `/console/runs/${String(launched.body.batch_id)}`;
    await owner.visitor.get(href);
    assert.equal((await owner.visitor.post(`${href}/cancel`, {}, { csrf: false })).status, 403, 'not without the token');
    const cancelled = await owner.visitor.post(`${href}/cancel`, {});
    assert.equal(cancelled.status, 302);
    // The API's cancel waits for the run to stop (a second or two), so the page it returns to shows it cancelled.
    assert.equal(cancelled.location, `${href}?cancelled=1`);
    const shown = await owner.visitor.get(cancelled.location);
    assert.equal(tagWith(shown.body, 'div', 'id', 'run-progress')?.['data-state'], 'cancelled');
    assert.ok(tagWith(shown.body, 'p', 'id', 'run-cancelled'), 'the page says it was cancelled');
    let state = '';
    for (const until = Date.now() + 20_000; Date.now() < until && !['cancelled', 'completed'].includes(state);) {
      await new Promise((r) => setTimeout(r, 300));
      state = tagWith((await owner.visitor.get(`${href}/progress`)).body, 'div', 'id', 'run-progress')?.['data-state'] ?? '';
    }
    assert.equal(state, 'cancelled');
    const after = await owner.visitor.get(href);
    assert.equal(tagWith(after.body, 'button', 'id', 'cancel-run'), undefined);
    assert.match(after.body, /credited back/);
  });
});
