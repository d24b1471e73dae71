import assert from 'node:assert/strict';
import { keyFormBody } from '../../../api/console/pages/keys';
import { parseActivityQuery } from '../../../operations/activity';
import { monthStartUtc } from '../../../domain/api-keys';
import { parseAlertsChange, parseKeyBudget, parseNewKey, parseRetentionChange } from '../../../operations/requests/organization';
import { refusal } from './refusal';

/** Issue 41 items 3 and 6: the key and activity requests read into the operations' shapes, or refused by name. */

describe('keys by API: the body of POST /v1/organization/keys', () => {
  it('reads every field, USD into micro-dollars exactly and unix seconds into an instant', () => {
    const key = parseNewKey({
      label: ' nightly ',
      kind: 'test',
      scopes: ['models', 'completions', 'models'],
      expires_at: 1_798_761_600,
      modes: ['QRM:PANL', 'QRM:PANL'],
      monthly_budget_usd: 12.345678,
      requests_per_minute: 10,
    });
    assert.deepEqual(key, {
      keyKind: 'test',
      label: 'nightly',
      scopes: ['models', 'completions'],
      expiresAt: new Date('2027-01-01T00:00:00Z'),
      allowedModes: ['QRM:PANL'],
      monthlyBudgetMicros: 12_345_678n,
      requestsPerMinute: 10,
    });
    assert.deepEqual(parseNewKey({}), { keyKind: 'live' });
  });

  it('refuses a bad field naming it, and a field it does not have as unknown_parameter', () => {
    for (const [body, param] of [
      [{ label: '' }, 'label'],
      [{ kind: 'root' }, 'kind'],
      [{ scopes: [] }, 'scopes'],
      [{ modes: ['a\u0000b'] }, 'modes'],
      [{ monthly_budget_usd: 0 }, 'monthly_budget_usd'],
      [{ monthly_budget_usd: 1.0000001 }, 'monthly_budget_usd'],
      [{ requests_per_minute: 0 }, 'requests_per_minute'],
      [{ expires_at: 1.5 }, 'expires_at'],
    ] as const) {
      const err = refusal(() => parseNewKey(body));
      assert.deepEqual([err.code, err.param], ['invalid_request', param], JSON.stringify(body));
    }
    const unknown = refusal(() => parseNewKey({ budget_usd: 3 }));
    assert.deepEqual([unknown.code, unknown.param], ['unknown_parameter', 'budget_usd']);
  });

  it('a budget is set in USD or cleared with null', () => {
    assert.equal(parseKeyBudget({ monthly_budget_usd: 0.000001 }), 1n);
    assert.equal(parseKeyBudget({ monthly_budget_usd: null }), null);
    assert.equal(refusal(() => parseKeyBudget({})).param, 'monthly_budget_usd');
  });

  it("the console's form becomes the same body: days to an expiry, modes split, an admin key without scopes", () => {
    const now = Date.UTC(2026, 10, 27, 12, 0, 0);
    const body = keyFormBody(
      {
        kind: 'live',
        label: 'ci',
        scopes: ['models'],
        modes: 'QRM:PANL, QRM:EXPR',
        expires_in_days: '2',
        monthly_budget_usd: '5.5',
        requests_per_minute: '',
      },
      now,
    );
    assert.deepEqual(body, {
      kind: 'live',
      label: 'ci',
      scopes: ['models'],
      expires_at: now / 1000 + 2 * 86_400,
      modes: ['QRM:PANL', 'QRM:EXPR'],
      monthly_budget_usd: 5.5,
    });
    assert.deepEqual(keyFormBody({ kind: 'admin', scopes: ['models'] }, now), { kind: 'admin' });
    // Text that is no number reaches the parser as text, which names the field.
    assert.equal(
      refusal(() => parseNewKey(keyFormBody({ monthly_budget_usd: 'lots', scopes: 'models' }, now))).param,
      'monthly_budget_usd',
    );
  });

  it('a month starts on its first day at 00:00 UTC', () => {
    assert.equal(monthStartUtc(new Date('2026-11-30T23:59:59.999Z')).toISOString(), '2026-11-01T00:00:00.000Z');
    assert.equal(monthStartUtc(new Date('2027-01-01T00:00:00.000Z')).toISOString(), '2027-01-01T00:00:00.000Z');
  });
});

describe('the activity log: the query of GET /v1/organization/activity', () => {
  it('reads a cursor, kinds and instants in unix seconds or ISO 8601', () => {
    assert.deepEqual(
      parseActivityQuery({
        limit: '5',
        after: 'act_42',
        kind: 'key.created,key.revoked',
        since: '1798761600',
        until: '2027-02-01T00:00:00Z',
      }),
      {
        limit: 5,
        after: 42n,
        kinds: ['key.created', 'key.revoked'],
        since: new Date('2027-01-01T00:00:00Z'),
        until: new Date('2027-02-01T00:00:00Z'),
      },
    );
    assert.equal(parseActivityQuery({}).limit, 50);
  });

  it('refuses each bad parameter by name', () => {
    for (const [query, param] of [
      [{ limit: '201' }, 'limit'],
      [{ after: '42' }, 'after'],
      [{ after: 'act_0' }, 'after'],
      [{ kind: 'key.created,key.stolen' }, 'kind'],
      [{ since: 'last week' }, 'since'],
      [{ since: '1798761600', until: '1798761600' }, 'until'],
      [{ kind: ['key.created', 'key.revoked'] }, 'kind'],
    ] as const) {
      const err = refusal(() => parseActivityQuery(query));
      assert.deepEqual([err.code, err.param], ['invalid_request', param], JSON.stringify(query));
    }
  });
});

describe('alerts and retention by API: the bodies of POST /v1/organization/alerts and /retention (issue 53 item 5)', () => {
  it('reads the alert fields sent, leaving out those not sent', () => {
    assert.deepEqual(parseAlertsChange({ webhook_url: 'https://hooks.example.com/q', balance_low_usd: 12.5 }), {
      webhookUrl: 'https://hooks.example.com/q',
      lowBalanceUsd: 12.5,
    });
    assert.deepEqual(parseAlertsChange({ webhook_url: null }), { webhookUrl: null });
    assert.deepEqual(parseAlertsChange({ balance_low_usd: 0 }), { lowBalanceUsd: 0 });
  });

  it('reads the retention: whole days, or null for the default', () => {
    assert.equal(parseRetentionChange({ transcript_retention_days: 0 }), 0);
    assert.equal(parseRetentionChange({ transcript_retention_days: 3650 }), 3650);
    assert.equal(parseRetentionChange({ transcript_retention_days: null }), null);
  });

  it('refuses a bad field naming it, an empty change, and a field the body does not have as unknown_parameter', () => {
    for (const [body, param] of [
      [{}, 'webhook_url'],
      [{ webhook_url: 42 }, 'webhook_url'],
      [{ webhook_url: 'x'.repeat(2049) }, 'webhook_url'],
      [{ balance_low_usd: -1 }, 'balance_low_usd'],
      [{ balance_low_usd: '5' }, 'balance_low_usd'],
      [{ balance_low_usd: 1_000_001 }, 'balance_low_usd'],
    ] as const) {
      const err = refusal(() => parseAlertsChange(body));
      assert.deepEqual([err.code, err.param], ['invalid_request', param], JSON.stringify(body));
    }
    for (const body of [{}, { transcript_retention_days: 1.5 }, { transcript_retention_days: -1 }, { transcript_retention_days: 3651 }]) {
      const err = refusal(() => parseRetentionChange(body));
      assert.deepEqual([err.code, err.param], ['invalid_request', 'transcript_retention_days'], JSON.stringify(body));
    }
    const unknownAlerts = refusal(() => parseAlertsChange({ webhook_url: null, threshold: 3 }));
    assert.deepEqual([unknownAlerts.code, unknownAlerts.param], ['unknown_parameter', 'threshold']);
    const unknownRetention = refusal(() => parseRetentionChange({ transcript_retention_days: 7, webhook_url: null }));
    assert.deepEqual([unknownRetention.code, unknownRetention.param], ['unknown_parameter', 'webhook_url']);
  });
});
