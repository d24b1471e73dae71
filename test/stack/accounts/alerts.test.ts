import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createApiKey } from '../../../db/repositories/api-keys';
import { workflowIds } from '../../../domain/workflow-ids';
import { createLogger } from '../../../infra/log';
import { ensureUpkeepSchedule, UPKEEP_SCHEDULE_ID } from '../../../starters/account-events';
import { startAccountEventDispatch } from '../../../worker/account-events';
import { TASK_QUEUES } from '../../../workflows/task-queues';
import { call, FORMS, newKey, PANEL, startApi, USER, type Api } from '../api/helpers';
import { Visitor } from '../console/helpers';
import { recordHistory, startProductWorkers } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { Receiver, verifies, type Delivery } from '../../harness/webhook-receiver';

/**
 * Issue 41 item 4: the organisation's webhook carries account events, signed as run callbacks are. `balance.low`
 * fires once when a charge takes the balance below the owner's threshold (and again only after the balance is back
 * above it); `trial.expiring` fires 7 days and 1 day before the trial ends, once each, from the hourly upkeep
 * schedule; a failed delivery is retried with the same event id and body; the console lists the events with their
 * delivery. Thresholds and expected figures are set and read here, from Postgres and the test's own numbers.
 */

const PASSWORD = 'correct horse battery staple';
const DAY_MS = 86_400_000;

interface Event {
  id: string;
  object: string;
  type: string;
  created: number;
  organization: string;
  data: Record<string, unknown>;
}

describe('accounts: alerts on the signed webhook (issue 41 item 4)', function () {
  this.timeout(300_000);
  let workers: { stop(): Promise<void> };
  let dispatch: { stop(): Promise<void> };
  const apis: Partial<Record<'A' | 'B', Api>> = {};
  const receiver = new Receiver();

  before(async () => {
    workers = await startProductWorkers();
    // The worker's dispatcher, as worker/run.ts starts it, ticking fast and retrying after 200 ms.
    dispatch = startAccountEventDispatch(
      { db: stack().db, client: stack().env.client, log: createLogger('test-dispatch', () => undefined) },
      { everyMs: 200, retryInitialMs: 200 },
    );
    apis.A = await startApi('A');
    apis.B = await startApi('B');
    await receiver.start();
  });
  after(async () => {
    await receiver.close();
    await apis.A?.close();
    await apis.B?.close();
    await dispatch.stop();
    await workers.stop();
  });

  /** An owner who signed up in the console, with the signing secret shown once and the alert settings saved. */
  async function owner(api: Api, settings: { path: string; lowUsd: string }): Promise<{ visitor: Visitor; orgId: string; secret: string }> {
    const org = `Alerts ${randomUUID().slice(0, 8)}`;
    const visitor = new Visitor(api);
    await visitor.signUp({ email: `al-${randomUUID().slice(0, 8)}@example.com`, password: PASSWORD, org });
    const row = (await stack().db('organisations').where({ name: org }).first('id')) as { id: string };
    await visitor.get('/console/keys');
    const shown = await visitor.post('/console/webhook-secret', {});
    const secret = /id="new-webhook-secret">(whsec_[A-Za-z0-9_-]+)</.exec(shown.body)?.[1];
    assert.ok(secret);
    await visitor.get('/console/alerts');
    const saved = await visitor.post('/console/alerts', {
      webhook_url: `${receiver.url}${settings.path}`,
      balance_low_usd: settings.lowUsd,
      transcript_retention_days: '',
    });
    assert.equal(saved.status, 302, saved.body.slice(0, 500));
    return { visitor, orgId: row.id, secret };
  }

  /** One pass of the hourly upkeep, as the schedule starts it. */
  const upkeep = async (): Promise<void> => {
    const workflowId = `test-upkeep-${randomUUID()}`;
    await stack().env.client.workflow.execute('accountUpkeepWorkflow', { taskQueue: TASK_QUEUES.deliberation, workflowId, args: [] });
    await recordHistory('account-upkeep', workflowId);
  };

  const balanceOf = async (orgId: string): Promise<bigint> =>
    ((await stack().db('balances').where({ org_id: orgId }).first('balance_micros')) as { balance_micros: bigint }).balance_micros;

  const eventsOf = async (orgId: string, type: string): Promise<{ id: string; state: string; attempts: number }[]> =>
    (await stack().db('account_events').where({ org_id: orgId, type }).orderBy('created_at').select('id', 'state', 'attempts')) as {
      id: string;
      state: string;
      attempts: number;
    }[];

  async function ask(api: Api, key: string, form: 'A' | 'B'): Promise<void> {
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key,
      body: { model: PANEL[form], messages: USER(`Alert me ${randomUUID()}`) },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }

  /** The delivery parsed, its signature and id header checked against the body. */
  function parsed(d: Delivery, secret: string): Event {
    assert.ok(verifies(d, secret), `signed with the console's secret: ${String(d.headers['quorum-signature'])}`);
    const event = JSON.parse(d.body) as Event;
    assert.equal(d.headers['quorum-event-id'], event.id);
    assert.match(event.id, /^evt_[0-9a-f]{24}$/);
    assert.equal(event.object, 'event');
    return event;
  }

  for (const form of FORMS) {
    it(`balance.low: the charge that crosses the owner's threshold sends one signed event; the next charge none; a new threshold, crossed, another (Form ${form})`, async () => {
      const api = apis[form] as Api;
      const path = `/low-${form}`;
      // Sign-up gives the $5 trial credit: a threshold a micro-dollar below it is crossed by the first charge.
      const o = await owner(api, { path, lowUsd: '4.999999' });
      const start = await balanceOf(o.orgId);
      assert.equal(start, 5_000_000n);
      const key = await newKey(o.orgId);
      await ask(api, key, form);
      const [d] = await receiver.until(path, 1);
      const event = parsed(d, o.secret);
      const after = await balanceOf(o.orgId);
      assert.ok(after < 4_999_999n);
      assert.deepEqual(
        [event.type, event.organization, event.data],
        ['balance.low', o.orgId, { balance_usd: Number(after) / 1e6, threshold_usd: 4.999999 }],
      );
      assert.ok(Math.abs(Date.now() / 1000 - event.created) < 120);

      // Still below: no second event for the same fall.
      await ask(api, key, form);
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(receiver.of(path).length, 1, 'one event per fall');
      assert.deepEqual(
        (await eventsOf(o.orgId, 'balance.low')).map((e) => [e.id, e.state, e.attempts]),
        [[event.id, 'delivered', 1]],
      );

      // Back above the threshold (a development top-up in the console): that fall is over. A threshold just below
      // the balance now is crossed by the next charge: a new event.
      await o.visitor.get('/console/overview');
      assert.equal((await o.visitor.post('/console/top-up', { amount_usd: '1' })).status, 302);
      const topped = (await stack().db('balances').where({ org_id: o.orgId }).first('balance_micros', 'low_alerted')) as {
        balance_micros: bigint;
        low_alerted: boolean;
      };
      assert.equal(topped.low_alerted, false);
      await o.visitor.get('/console/alerts');
      const threshold = (Number(topped.balance_micros - 1n) / 1e6).toFixed(6);
      const saved = await o.visitor.post('/console/alerts', {
        webhook_url: `${receiver.url}${path}`,
        balance_low_usd: threshold,
        transcript_retention_days: '',
      });
      assert.equal(saved.status, 302);
      await ask(api, key, form);
      const [, again] = await receiver.until(path, 2);
      const second = parsed(again, o.secret);
      assert.equal(second.type, 'balance.low');
      assert.notEqual(second.id, event.id);
      assert.deepEqual(second.data, { balance_usd: Number(await balanceOf(o.orgId)) / 1e6, threshold_usd: Number(threshold) });

      // The console lists both with their delivery.
      const page = await o.visitor.get('/console/alerts');
      for (const id of [event.id, second.id])
        assert.match(page.body, new RegExp(`data-event="${id}">[\\s\\S]*?class="delivery">delivered<`));
    });
  }

  it('a receiver that fails is sent the same event again, same id, same bytes, until it answers 2xx', async () => {
    const api = apis.B as Api;
    const path = '/low-retry';
    receiver.answers.set(path, [500, 503]);
    const o = await owner(api, { path, lowUsd: '4.999999' });
    await ask(api, await newKey(o.orgId), 'B');
    const tries = await receiver.until(path, 3);
    const events = tries.map((d) => parsed(d, o.secret));
    assert.deepEqual(new Set(events.map((e) => e.id)).size, 1, 'one event id on every attempt');
    assert.deepEqual(new Set(tries.map((d) => d.body)).size, 1, 'the same body on every attempt');
    const handle = stack().env.client.workflow.getHandle(workflowIds.accountEvent(events[0].id));
    assert.deepEqual(await handle.result(), { eventId: events[0].id, state: 'delivered', status: 200 });
    assert.deepEqual(
      (await eventsOf(o.orgId, 'balance.low')).map((e) => [e.id, e.state, e.attempts]),
      [[events[0].id, 'delivered', 3]],
    );
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(receiver.of(path).length, 3, 'nothing after the 2xx');
  });

  it('trial.expiring: the upkeep schedule sends it 7 days before the end, then 1 day before, once each', async () => {
    const api = apis.B as Api;
    const path = '/trial';
    const o = await owner(api, { path, lowUsd: '0' });
    // The trial ends 30 days after it began: begun 23.5 days ago, it ends in 6.5 days.
    const endsIn = async (ms: number): Promise<Date> => {
      const startedAt = new Date(Date.now() + ms - 30 * DAY_MS);
      await stack().db('organisations').where({ id: o.orgId }).update({ trial_started_at: startedAt });
      return new Date(startedAt.getTime() + 30 * DAY_MS);
    };
    const sevenDays = await endsIn(6.5 * DAY_MS);
    // The first pass by the schedule itself, as production runs it (hourly), triggered now.
    await ensureUpkeepSchedule(stack().env.client);
    await stack().env.client.schedule.getHandle(UPKEEP_SCHEDULE_ID).trigger();
    const [d7] = await receiver.until(path, 1);
    const e7 = parsed(d7, o.secret);
    assert.deepEqual([e7.type, e7.data], ['trial.expiring', { expires_at: sevenDays.toISOString(), days_before: 7, trial_credit_usd: 5 }]);
    await upkeep();
    const oneDay = await endsIn(0.5 * DAY_MS);
    await upkeep();
    await upkeep();
    const [, d1] = await receiver.until(path, 2);
    const e1 = parsed(d1, o.secret);
    assert.deepEqual([e1.type, e1.data], ['trial.expiring', { expires_at: oneDay.toISOString(), days_before: 1, trial_credit_usd: 5 }]);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(receiver.of(path).length, 2, 'each once');
    assert.deepEqual(
      (await eventsOf(o.orgId, 'trial.expiring')).map((e) => [e.id, e.state]),
      [
        [e7.id, 'delivered'],
        [e1.id, 'delivered'],
      ],
    );
  });

  it("key.expiring and key.budget_reached: each once per key, signed, with the key's figures", async () => {
    const api = apis.B as Api;
    const path = '/keys';
    const o = await owner(api, { path, lowUsd: '0' });
    // A key expiring in 6.5 days with a budget of 1 µ$: its 7-day alert is due, once however often the upkeep runs.
    const expiresAt = new Date(Date.now() + 6.5 * DAY_MS);
    const key = await createApiKey(stack().db, { orgId: o.orgId, keyKind: 'live', expiresAt, monthlyBudgetMicros: 1n });
    await upkeep();
    await upkeep();
    const [d] = await receiver.until(path, 1);
    const expiry = parsed(d, o.secret);
    assert.equal(expiry.type, 'key.expiring');
    const delivery = workflowIds.accountEvent(expiry.id);
    await stack().env.client.workflow.getHandle(delivery).result();
    await recordHistory('account-event', delivery);
    assert.deepEqual([expiry.data.key_id, expiry.data.expires_at, expiry.data.days_before], [key.keyId, expiresAt.toISOString(), 7]);

    // The first call is refused (402) and raises the alert; the second is refused and raises none.
    for (let i = 0; i < 2; i++) {
      const r = await call(api, 'POST', '/v1/chat/completions', {
        key: key.apiKey,
        body: { model: PANEL.B, messages: USER('Over budget?') },
      });
      assert.equal(r.status, 402, JSON.stringify(r.body));
      assert.equal(r.body.error?.code, 'key_budget_exceeded');
    }
    const [, b] = await receiver.until(path, 2);
    const budget = parsed(b, o.secret);
    assert.equal(budget.type, 'key.budget_reached');
    assert.deepEqual([budget.data.key_id, budget.data.monthly_budget_usd, budget.data.spent_usd], [key.keyId, 0.000001, 0]);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(receiver.of(path).length, 2, 'each once');
  });

  it('a settings change is on the activity log: retention from and to, the webhook host and threshold, no path or query', async () => {
    const o = await owner(apis.B as Api, { path: '/activity?token=receiver-secret', lowUsd: '3' });
    await o.visitor.get('/console/alerts');
    const saved = await o.visitor.post('/console/alerts', {
      webhook_url: `${receiver.url}/activity?token=receiver-secret`,
      balance_low_usd: '3',
      transcript_retention_days: '0',
    });
    assert.equal(saved.status, 302, saved.body.slice(0, 500));
    const rows = (await stack().db('activity').where({ org_id: o.orgId }).orderBy('at').select('kind', 'detail')) as {
      kind: string;
      detail: Record<string, unknown>;
    }[];
    assert.deepEqual(
      rows.filter((r) => r.kind === 'retention.changed' || r.kind === 'alerts.changed').map((r) => [r.kind, r.detail]),
      [
        ['alerts.changed', { webhook_host: new URL(receiver.url).host, balance_low_usd: 3 }],
        ['retention.changed', { from_days: null, to_days: 0, default_days: 30 }],
      ],
    );
    assert.doesNotMatch(JSON.stringify(rows), /receiver-secret/);
  });

  it('the console refuses a wrong webhook URL, threshold or retention, and saves nothing', async () => {
    const api = apis.B as Api;
    const o = await owner(api, { path: '/unused', lowUsd: '2' });
    await o.visitor.get('/console/alerts');
    const bad = await o.visitor.post('/console/alerts', {
      webhook_url: 'ftp://example.com/x',
      balance_low_usd: '2',
      transcript_retention_days: '',
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /webhook URL must be an http or https URL/);
    const badDays = await o.visitor.post('/console/alerts', { webhook_url: '', balance_low_usd: '2', transcript_retention_days: '99999' });
    assert.equal(badDays.status, 400);
    const badUsd = await o.visitor.post('/console/alerts', { webhook_url: '', balance_low_usd: '-1', transcript_retention_days: '' });
    assert.equal(badUsd.status, 400);
    const row = (await stack().db('balances').where({ org_id: o.orgId }).first('low_balance_micros')) as { low_balance_micros: bigint };
    assert.equal(row.low_balance_micros, 2_000_000n, 'nothing saved by a refused form');
  });
});
