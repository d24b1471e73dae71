import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { call, startApi, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { newPage, screenshot } from '../../harness/browser';
import { stack } from '../../harness/stack';
import { demoModes } from '../runs/helpers';

/**
 * Issue 14's journey in a real headless Chromium: sign up, issue a key (shown once), build a mode with a refused
 * field and then the fixed one, release it, call it with the official OpenAI client and that key, find the call's
 * receipt on the receipts page, and watch a run's progress page to its chart. A screenshot of every page lands under
 * test-output/screenshots/journey/ for review.
 */

const PASSWORD = 'correct horse battery staple';

async function shot(page: Page, name: string): Promise<void> {
  await screenshot(page, `journey/${name}`);
}

describe('console: a person’s journey in a real browser', function () {
  this.timeout(240_000);
  let api: Api;
  let workers: { stop(): Promise<void> };

  before(async () => {
    // Engines that take a moment, so a run is seen in progress before it ends.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:300' });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('signs up, issues a key, builds and releases a mode, calls it, and reads its receipt and a run', async () => {
    const page = await newPage();
    const email = `grace-${randomUUID().slice(0, 8)}@example.com`;
    const orgName = `Grace Labs ${randomUUID().slice(0, 4)}`;

    // Sign up: the organisation is created with its trial credit, and the person lands on the keys page.
    await page.goto(`${api.url}/console/sign-up`);
    await shot(page, '01-sign-up');
    await page.getByLabel('Your name').fill('Grace');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Organisation').fill(orgName);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(/\/console\/keys\?welcome=1$/);
    await shot(page, '02-keys-welcome');

    // A live key, shown once with the SDK snippet; the keys page then shows only its last four characters.
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = ((await page.locator('#new-key').textContent()) ?? '').trim();
    assert.match(key, /^qrm_live_[0-9A-Za-z]{32}$/);
    assert.match((await page.locator('#snippet-py').textContent()) ?? '', new RegExp(`base_url="${api.url}/v1"`));
    await shot(page, '03-key-shown-once');
    await page.goto(`${api.url}/console/keys`);
    assert.ok(!(await page.content()).includes(key), 'the key is not shown again');
    assert.ok((await page.content()).includes(`…${key.slice(-4)}`));

    // The builder: a refused ticker shows its code beside the field, live; the fixed spec releases version 1.
    await page.goto(`${api.url}/console/modes/new`);
    await page.locator('[name="name"]').fill('Journey Panel');
    await page.locator('[name="ticker"]').fill('ab');
    await page.locator('[name="ticker"]').press('Tab');
    await page.locator('#refusal-ticker').getByText('ticker_invalid').waitFor();
    assert.equal(await page.locator('[name="ticker"]').getAttribute('aria-invalid'), 'true');
    await shot(page, '04-builder-refused-field');
    await page.locator('[name="ticker"]').fill('JRNY');
    await page.locator('[name="ticker"]').press('Tab');
    await page.locator('#refusal-ticker code').waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Save and release' }).click();
    await page.waitForURL(/\/console\/modes\/[^/?]+\?done=released$/);
    const summary = (await page.locator('#mode-summary').textContent()) ?? '';
    const ticker = /([A-Z]+:JRNY)/.exec(summary)?.[1];
    assert.ok(ticker, summary);
    assert.match(summary, /released · version 1/);
    await shot(page, '05-mode-released');

    // The official OpenAI client, with only the base URL and the model changed.
    const client = new OpenAI({ baseURL: `${api.url}/v1`, apiKey: key });
    const reply = await client.chat.completions.create({ model: ticker, messages: [{ role: 'user', content: 'Why is the sky blue?' }] });
    assert.ok(reply.choices[0].message.content);
    const requestId = (reply as unknown as { svc: { request_id: string } }).svc.request_id;

    // Its receipt: listed, then read in detail.
    await page.goto(`${api.url}/console/receipts`);
    const row = page.locator(`#receipts-table [data-request-id="${requestId}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', new RegExp(ticker));
    await shot(page, '06-receipts');
    await row.getByRole('link').first().click();
    await page.locator('#receipt-detail').waitFor();
    assert.equal(await page.locator('#receipt-detail').getAttribute('data-request-id'), requestId);
    assert.ok((await page.locator('#seat-passes tbody tr').count()) >= 3, 'the three seats answered');
    await shot(page, '07-receipt-detail');

    // A run on one of the organisation's sim modes, followed on its progress page until its chart shows.
    const orgId = ((await stack().db('organisations').where({ name: orgName }).first('id')) as { id: string }).id;
    const strong = (await demoModes(orgId)).strong.B;
    const launched = await call(api, 'POST', '/v1/tests', { key, body: { model: strong, questions: { easy: 2, medium: 2, hard: 2 } } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const batchId = launched.body.batch_id as string;
    await page.goto(`${api.url}/console/runs`);
    await page.locator(`[data-run-id="${batchId}"]`).getByRole('link').first().click();
    await page.locator('#run-progress').waitFor();
    await shot(page, '08-run-in-progress');
    // htmx replaces the progress block every 2 s until the run has ended.
    await page.locator('#run-progress[data-state="completed"]').waitFor({ timeout: 120_000 });
    await page.locator('#win-rate-chart').waitFor();
    assert.equal(await page.locator('#win-rate-chart .interval').count(), 4, 'three buckets and the overall rate');
    await shot(page, '09-run-completed-chart');
    // The equal-cost arms (issue 39 item 2): the mode and its three baselines, each with its interval, and the table's
    // figures are the poll's.
    assert.equal(await page.locator('#equal-cost-chart .interval').count(), 4, 'the mode, the baseline, Self-MoA and the vote');
    const poll = await call(api, 'GET', `/v1/tests?batch_id=${batchId}`, { key });
    const arms = (poll.body.batch as { baselines: { arms: { arm: string; accuracy: number }[] } }).baselines.arms;
    for (const arm of arms) {
      const cell = await page.locator(`#equal-cost-table [data-arm="${arm.arm}"] td`).first().textContent();
      assert.match(cell ?? '', new RegExp(`^${(arm.accuracy * 100).toFixed(1).replace('.', '\\.')}%`), arm.arm);
    }
    await page.locator('#equal-cost').scrollIntoViewIfNeeded();
    await shot(page, '10-run-equal-cost');
  });
});
