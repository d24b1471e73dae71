import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { usd } from '../../../api/console/format';
import { TestPollSchema } from '../../../api/v1/run-resources';
import { call, newKey, startApi, type Api } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { newPage, screenshot } from '../../harness/browser';
import { stack } from '../../harness/stack';
import { demoModes, unjudgedPrices } from '../runs/helpers';

/**
 * The run page's Cancel button in a real headless Chromium (issue 28 item 2): a person stops a long run part-way,
 * and the page the form returns to shows it `cancelled` with its unjudged questions' prices credited back.
 */

const PASSWORD = 'correct horse battery staple';

describe('console: cancelling a run from its page in a real browser', function () {
  this.timeout(240_000);
  let api: Api;
  let workers: { stop(): Promise<void> };

  before(async () => {
    // One question at a time on engines that take a moment: the run is still going when the button is pressed.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:100' });
    api = await startApi('B', { runs: { testsPerDay: 20, certificationsPerDay: 3, window: 1 } });
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('Cancel run stops a live run; the page shows it cancelled and what was credited back, and no button', async () => {
    const page = await newPage();
    const orgName = `Cancel Labs ${randomUUID().slice(0, 8)}`;
    await page.goto(`${api.url}/console/sign-up`);
    await page.getByLabel('Your name').fill('Ada');
    await page.getByLabel('Email').fill(`ada-${randomUUID().slice(0, 8)}@example.com`);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Organisation').fill(orgName);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(/\/console\/keys\?welcome=1$/);
    const orgId = ((await stack().db('organisations').where({ name: orgName }).first('id')) as { id: string }).id;
    const key = await newKey(orgId);
    const weak = (await demoModes(orgId)).weak.B;

    const launched = await call(api, 'POST', '/v1/tests', { key, body: { model: weak, questions: { easy: 10, medium: 10 } } });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    const id = launched.body.batch_id as string;
    const billed = BigInt(Math.round((launched.body.billed_usd as number) * 1_000_000));
    const href = `${api.url}/console/runs/${id}`;
    // Part-way: a question judged, so the refund is a share of the charge, not all of it.
    const answered = async (): Promise<number> =>
      Number((await stack().db('run_questions').where({ run_id: id }).count<{ n: string }[]>('* as n'))[0].n);
    for (const until = Date.now() + 60_000; (await answered()) < 1 && Date.now() < until;) await new Promise((r) => setTimeout(r, 100));
    await page.goto(href);
    await page.locator('#run-progress[data-state="running"]').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.waitForURL(`${href}?cancelled=1`);
    await page.locator('#run-cancelled').waitFor();
    assert.equal(await page.locator('#run-progress').getAttribute('data-state'), 'cancelled');
    assert.equal(await page.getByRole('button', { name: 'Cancel run' }).count(), 0, 'nothing left to cancel');
    await screenshot(page, 'console/run-cancelled');

    // The refund the page shows is the unjudged questions' own prices (issue 38 item 9), worked here from the run's rows.
    const batch = TestPollSchema.parse((await call(api, 'GET', `/v1/tests?batch_id=${id}`, { key })).body).batch;
    assert.equal(batch.state, 'cancelled');
    const refund = await unjudgedPrices(id);
    assert.ok(refund < billed);
    assert.ok(batch.progress.done >= 1 && batch.progress.done < 20, `answered ${batch.progress.done}`);
    assert.equal(BigInt(Math.round(batch.refunded_usd * 1_000_000)), refund);
    const shown = ((await page.locator('#run-progress').textContent()) ?? '').replace(/\s+/g, ' ');
    assert.ok(refund > 0n);
    assert.ok(shown.includes(`${usd(refund)} credited back`), shown);
  });
});
