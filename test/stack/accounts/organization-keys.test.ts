import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { topUp } from '../../../db/repositories/ledger';
import { modeTemplate } from '../../../domain/mode-spec';
import { call, EXPRESS, FORMS, PANEL, startApi, USER, type Api, type Reply } from '../api/helpers';
import { Visitor } from '../console/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { quorumCli } from '../../harness/cli';
import { stack } from '../../harness/stack';

/**
 * Issue 41 items 3 and 6 through HTTP, in both Forms: an admin key the owner makes in the console manages the
 * organisation's keys over `/v1/organization/keys` (label, scopes, modes, expiry, a monthly budget, a requests-per-
 * minute limit below the organisation's; the secret shown once), and `/v1/organization/activity` (and the console's
 * page) shows every change with who, when and from where, and never a secret.
 */

const PASSWORD = 'correct horse battery staple';
const ORG_RPM = 60;

interface Owner {
  visitor: Visitor;
  orgId: string;
  email: string;
  /** The admin key, made on the console's key page by the owner. */
  admin: string;
}

const secretOn = (pageBody: string, id: string): string => {
  const m = new RegExp(`id="${id}">([^<]+)<`).exec(pageBody);
  assert.ok(m, `no #${id} on the page: ${pageBody.slice(0, 500)}`);
  return m[1].trim();
};

async function ownerOf(api: Api, secrets: string[]): Promise<Owner> {
  const org = `Admin ${randomUUID().slice(0, 8)}`;
  const email = `a-${randomUUID().slice(0, 8)}@example.com`;
  const visitor = new Visitor(api);
  await visitor.signUp({ email, password: PASSWORD, org });
  const { id: orgId } = (await stack().db('organisations').where({ name: org }).first('id')) as { id: string };
  await visitor.get('/console/keys');
  const made = await visitor.post('/console/keys', { kind: 'admin', label: 'automation' });
  assert.equal(made.status, 200, made.body.slice(0, 1000));
  const admin = secretOn(made.body, 'new-key');
  assert.match(admin, /^qrm_admin_[A-Za-z0-9]{32}$/);
  secrets.push(admin);
  return { visitor, orgId, email, admin };
}

function expectError(reply: Reply, status: number, code: string, param?: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(reply.body.error?.code, code, JSON.stringify(reply.body));
  if (param !== undefined) assert.equal(reply.body.error?.param, param, JSON.stringify(reply.body));
}

const micros = (usd: unknown): bigint => BigInt(Math.round(Number(usd) * 1_000_000));
const usd = (m: bigint): number => Number(m) / 1_000_000;

for (const form of FORMS) {
  describe(`Keys by API and the activity log, Form ${form} (issue 41 items 3 and 6)`, function () {
    this.timeout(240_000);
    let api: Api;
    let workers: { stop(): Promise<void> };
    let owner: Owner;
    /** Every secret this suite made: none may appear in the activity log. */
    const secrets: string[] = [];

    before(async () => {
      workers = await startProductWorkers();
      api = await startApi(form);
      owner = await ownerOf(api, secrets);
    });
    after(async () => {
      await api.close();
      await workers.stop();
    });

    const create = async (body: Record<string, unknown>): Promise<Reply> => {
      const reply = await call(api, 'POST', '/v1/organization/keys', { key: owner.admin, body });
      if (typeof reply.body.secret === 'string') secrets.push(reply.body.secret);
      return reply;
    };

    it('an admin key creates a key whose secret is shown once, limited to a mode: it calls that mode and is refused another', async () => {
      const reply = await create({ label: 'panel only', kind: 'live', modes: [PANEL[form]], scopes: ['completions', 'models'] });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.headers.get('cache-control'), 'no-store');
      const secret = String(reply.body.secret);
      assert.match(secret, /^qrm_live_[A-Za-z0-9]{32}$/);
      assert.equal(reply.body.redacted_value, `qrm_live_…${secret.slice(-4)}`);
      assert.deepEqual([reply.body.label, reply.body.modes, reply.body.scopes], ['panel only', [PANEL[form]], ['completions', 'models']]);
      // Listed and read back without its secret.
      const listed = await call(api, 'GET', '/v1/organization/keys', { key: owner.admin });
      assert.equal(listed.status, 200);
      assert.ok(!JSON.stringify(listed.body).includes(secret));
      assert.ok((listed.body.data as { id: string }[]).some((k) => k.id === reply.body.id));
      const one = await call(api, 'GET', `/v1/organization/keys/${String(reply.body.id)}`, { key: owner.admin });
      assert.equal(one.status, 200);
      assert.ok(!JSON.stringify(one.body).includes(secret));

      const answered = await call(api, 'POST', '/v1/chat/completions', {
        key: secret,
        body: { model: PANEL[form], messages: USER(`Name a prime number. ${randomUUID()}`) },
      });
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      // Spec 01 Authentication 4 and 6: a key lacking the scope for the mode is 403 insufficient_scope.
      const before = await stack().db('requests').where({ org_id: owner.orgId }).count<{ count: string }[]>('* as count');
      expectError(
        await call(api, 'POST', '/v1/chat/completions', { key: secret, body: { model: EXPRESS[form], messages: USER('What is 2+2?') } }),
        403,
        'insufficient_scope',
        'model',
      );
      const after = await stack().db('requests').where({ org_id: owner.orgId }).count<{ count: string }[]>('* as count');
      assert.equal(after[0].count, before[0].count, 'nothing ran for the refused mode');
    });

    it('a key expires on time: answered before its expiry, 401 revoked_api_key after it', async () => {
      const expiresAt = Math.floor(Date.now() / 1000) + 2;
      const reply = await create({ label: 'short-lived', scopes: ['models'], expires_at: expiresAt });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.expires_at, expiresAt);
      const key = String(reply.body.secret);
      assert.equal((await call(api, 'GET', '/v1/models', { key })).status, 200);
      await new Promise((r) => setTimeout(r, expiresAt * 1000 - Date.now() + 100));
      expectError(await call(api, 'GET', '/v1/models', { key }), 401, 'revoked_api_key');
      // An expiry already past is refused at creation, naming it.
      expectError(await create({ expires_at: Math.floor(Date.now() / 1000) - 60 }), 400, 'invalid_request', 'expires_at');
    });

    it("a requests-per-minute limit is enforced, and must be below the organisation's", async () => {
      const reply = await create({ scopes: ['models'], requests_per_minute: 2 });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      const key = String(reply.body.secret);
      assert.equal((await call(api, 'GET', '/v1/models', { key })).status, 200);
      assert.equal((await call(api, 'GET', '/v1/models', { key })).status, 200);
      const third = await call(api, 'GET', '/v1/models', { key });
      expectError(third, 429, 'rate_limit_exceeded');
      assert.equal(third.headers.get('x-ratelimit-limit-requests'), '2');
      expectError(await create({ requests_per_minute: ORG_RPM }), 400, 'invalid_request', 'requests_per_minute');
    });

    /**
     * A live key for the panel with a budget of 100 USD, after its first call: how to call with it (prompts of one
     * length, so every call holds the same ceiling), and what that call held and cost, read from Postgres: the figures
     * its budget is judged against.
     */
    const budgetedKey = async (label: string): Promise<{ keyId: string; ask: () => Promise<Reply>; spent: bigint; hold: bigint }> => {
      const made = await create({ label, modes: [PANEL[form]], monthly_budget_usd: 100 });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const key = String(made.body.secret);
      const keyId = String(made.body.id);
      const ask = (): Promise<Reply> =>
        call(api, 'POST', '/v1/chat/completions', { key, body: { model: PANEL[form], messages: USER(`Name a colour. ${randomUUID()}`) } });
      const first = await ask();
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const [request] = (await stack().db('requests').where({ api_key_id: keyId }).select('id')) as { id: string }[];
      const { amount_micros: hold } = (await stack()
        .db('reservations')
        .where({ org_id: owner.orgId, request_id: request.id })
        .first('amount_micros')) as { amount_micros: string };
      const spent = await netCharged(request.id);
      assert.ok(spent > 0n, 'the first call was billed');
      return { keyId, ask, spent, hold: BigInt(hold) };
    };
    /** What a request took from the balance: the negated sum of its ledger entries. */
    const netCharged = async (requestId: string): Promise<bigint> => {
      const entries = (await stack()
        .db('ledger_entries')
        .where({ org_id: owner.orgId, request_id: requestId })
        .select('amount_micros')) as {
        amount_micros: string;
      }[];
      return -entries.reduce((s, e) => s + BigInt(e.amount_micros), 0n);
    };

    it('a key stops at its monthly budget: a call whose hold would pass it is 402 key_budget_exceeded with nothing run', async () => {
      const { db } = stack();
      const { keyId, ask, spent, hold } = await budgetedKey('budgeted');
      // The next call holds as much as the first did: one µ$ short of spent + hold refuses it.
      const tight = await call(api, 'POST', `/v1/organization/keys/${keyId}`, {
        key: owner.admin,
        body: { monthly_budget_usd: usd(spent + hold - 1n) },
      });
      assert.equal(tight.status, 200, JSON.stringify(tight.body));
      assert.equal(micros(tight.body.monthly_budget_usd), spent + hold - 1n);
      const ledgerBefore = await db('ledger_entries').where({ org_id: owner.orgId }).count<{ count: string }[]>('* as count');
      expectError(await ask(), 402, 'key_budget_exceeded');
      const requests = await db('requests').where({ api_key_id: keyId }).count<{ count: string }[]>('* as count');
      const ledgerAfter = await db('ledger_entries').where({ org_id: owner.orgId }).count<{ count: string }[]>('* as count');
      assert.equal(Number(requests[0].count), 1, 'no request row for the refused call');
      assert.equal(ledgerAfter[0].count, ledgerBefore[0].count, 'no ledger entry for the refused call');
      // Exactly spent + hold admits it.
      const exact = await call(api, 'POST', `/v1/organization/keys/${keyId}`, {
        key: owner.admin,
        body: { monthly_budget_usd: usd(spent + hold) },
      });
      assert.equal(exact.status, 200, JSON.stringify(exact.body));
      const admitted = await ask();
      assert.equal(admitted.status, 200, JSON.stringify(admitted.body));
      const read = await call(api, 'GET', `/v1/organization/keys/${keyId}`, { key: owner.admin });
      assert.equal(micros((read.body.spend as { held_usd: number }).held_usd), 0n);
      assert.ok(micros((read.body.spend as { spent_usd: number }).spent_usd) > spent);
    });

    it('calls at once on one key share its budget: the one whose hold fits runs, the others 402 key_budget_exceeded, billed nothing', async () => {
      const { db } = stack();
      const { keyId, ask, spent, hold } = await budgetedKey('budgeted at once');
      // The balance covers every call's hold, so the budget alone refuses.
      await topUp(db, { orgId: owner.orgId, amountMicros: 4n * hold });
      // Room for one more hold. Once that call settles the key has spent more, so no later hold fits either: exactly
      // one of the calls runs, whichever order they reach Postgres in. Each passes the API's check alone.
      const budget = spent + hold;
      const set = await call(api, 'POST', `/v1/organization/keys/${keyId}`, {
        key: owner.admin,
        body: { monthly_budget_usd: usd(budget) },
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      const replies = await Promise.all(Array.from({ length: 4 }, ask));
      const statuses = replies.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 402, 402, 402], JSON.stringify(replies.map((r) => r.body)));
      for (const refused of replies.filter((r) => r.status === 402)) expectError(refused, 402, 'key_budget_exceeded');
      // Read from Postgres, not from the API's own figures: the key's calls this month took at most its budget.
      const requests = (await db('requests').where({ api_key_id: keyId }).select('id', 'state', 'error_code')) as {
        id: string;
        state: string;
        error_code: string | null;
      }[];
      assert.deepEqual(requests.map((r) => `${r.state} ${r.error_code ?? ''}`.trim()).sort(), [
        'failed key_budget_exceeded',
        'failed key_budget_exceeded',
        'failed key_budget_exceeded',
        'succeeded',
        'succeeded',
      ]);
      const charged = await Promise.all(requests.map((r) => netCharged(r.id)));
      assert.equal(charged.filter((c) => c > 0n).length, 2, 'the first call and the one admitted were billed, no other');
      assert.ok(charged.reduce((a, b) => a + b, 0n) <= budget, `the key spent ${charged.join(' + ')} µ$ against a budget of ${budget}`);
      const held = await db('reservations')
        .whereIn(
          'request_id',
          requests.map((r) => r.id),
        )
        .where({ state: 'held' })
        .count<{ count: string }[]>('* as count');
      assert.equal(Number(held[0].count), 0, 'nothing left held');
    });

    it('only an admin key reaches the routes (403), an admin key calls no mode (403), another organisation is 404, bad input 400 naming it', async () => {
      const { ownerKey } = await (async () => {
        const v = new Visitor(api);
        const org = `Other ${randomUUID().slice(0, 8)}`;
        await v.signUp({ email: `o-${randomUUID().slice(0, 8)}@example.com`, password: PASSWORD, org });
        const { id } = (await stack().db('organisations').where({ name: org }).first('id')) as { id: string };
        await v.get('/console/keys');
        const made = await v.post('/console/keys', { kind: 'live', scopes: ['models'] });
        const secret = secretOn(made.body, 'new-key');
        secrets.push(secret);
        return { ownerKey: secret, orgId: id };
      })();
      expectError(await call(api, 'GET', '/v1/organization/keys', { key: ownerKey }), 403, 'insufficient_scope');
      expectError(await call(api, 'GET', '/v1/organization/activity', { key: ownerKey }), 403, 'insufficient_scope');
      expectError(await call(api, 'POST', '/v1/organization/keys', { key: ownerKey, body: {} }), 403, 'insufficient_scope');
      expectError(await call(api, 'GET', '/v1/models', { key: owner.admin }), 403, 'insufficient_scope');
      // It reads the account, as a key with the receipts scope does; the models-only key does not.
      for (const path of ['/v1/usage?start_time=0', '/v1/balance', '/v1/receipts', '/v1/ledger']) {
        const read = await call(api, 'GET', path, { key: owner.admin });
        assert.equal(read.status, 200, `${path}: ${JSON.stringify(read.body)}`);
        expectError(await call(api, 'GET', path, { key: ownerKey }), 403, 'insufficient_scope');
      }

      const otherKeyId = (
        (await stack().db('api_keys').whereNot({ org_id: owner.orgId }).whereNotNull('org_id').first('id')) as { id: string }
      ).id;
      expectError(await call(api, 'GET', `/v1/organization/keys/${otherKeyId}`, { key: owner.admin }), 404, 'not_found');
      expectError(await call(api, 'DELETE', `/v1/organization/keys/${otherKeyId}`, { key: owner.admin }), 404, 'not_found');
      expectError(
        await call(api, 'POST', `/v1/organization/keys/${otherKeyId}`, { key: owner.admin, body: { monthly_budget_usd: 1 } }),
        404,
        'not_found',
      );
      assert.equal(
        ((await stack().db('api_keys').where({ id: otherKeyId }).first('revoked_at')) as { revoked_at: Date | null }).revoked_at,
        null,
      );

      const bad: [Record<string, unknown>, string, string][] = [
        [{ label: 'x'.repeat(101) }, 'invalid_request', 'label'],
        [{ scopes: ['nope'] }, 'invalid_request', 'scopes'],
        [{ modes: [] }, 'invalid_request', 'modes'],
        [{ monthly_budget_usd: -1 }, 'invalid_request', 'monthly_budget_usd'],
        [{ monthly_budget_usd: 0.0000001 }, 'invalid_request', 'monthly_budget_usd'],
        [{ requests_per_minute: 1.5 }, 'invalid_request', 'requests_per_minute'],
        [{ expires_at: 'tomorrow' }, 'invalid_request', 'expires_at'],
        [{ kind: 'admin' }, 'invalid_request', 'kind'],
        [{ budget: 5 }, 'unknown_parameter', 'budget'],
      ];
      for (const [body, code, param] of bad) expectError(await create(body), 400, code, param);
      for (const [query, param] of [
        ['kind=nope', 'kind'],
        ['after=xyz', 'after'],
        ['limit=0', 'limit'],
        ['since=yesterday', 'since'],
      ])
        expectError(await call(api, 'GET', `/v1/organization/activity?${query}`, { key: owner.admin }), 400, 'invalid_request', param);
    });

    it('the activity log shows each change with who, when and from where, pages by cursor, filters, and holds no secret', async () => {
      const started = Math.floor(Date.now() / 1000) - 1;
      const { visitor, admin } = owner;
      // Revoked by API, twice: recorded once.
      const made = await create({ label: 'to revoke', scopes: ['models'] });
      const revokedId = String(made.body.id);
      const gone = await call(api, 'DELETE', `/v1/organization/keys/${revokedId}`, { key: admin });
      assert.deepEqual([gone.status, gone.body.deleted], [200, true]);
      assert.equal((await call(api, 'DELETE', `/v1/organization/keys/${revokedId}`, { key: admin })).status, 200);
      expectError(await call(api, 'GET', '/v1/models', { key: String(made.body.secret) }), 401, 'revoked_api_key');
      // Console changes by the owner: webhook secret, own provider key set and removed, an invitation.
      await visitor.get('/console/keys');
      const rotated = await visitor.post('/console/webhook-secret', {});
      secrets.push(secretOn(rotated.body, 'new-webhook-secret'));
      const providerKey = `sk-test-${randomUUID()}`;
      secrets.push(providerKey);
      await visitor.get('/console/provider-keys');
      assert.equal((await visitor.post('/console/provider-keys', { family: 'openai', api_key: providerKey })).status, 302);
      assert.equal((await visitor.post('/console/provider-keys/openai/remove', {})).status, 302);
      await visitor.get('/console/team');
      const invitee = `i-${randomUUID().slice(0, 8)}@example.com`;
      const invited = await visitor.post('/console/team/invite', { email: invitee });
      const invitationToken = decodeURIComponent(secretOn(invited.body, 'invite-link').split('token=')[1]);
      secrets.push(invitationToken);
      // The invited person joins, and the owner removes them.
      const joiner = new Visitor(api);
      await joiner.signUp({ email: invitee, password: PASSWORD, org: `Own ${randomUUID().slice(0, 8)}` });
      await joiner.get(`/console/invite?token=${encodeURIComponent(invitationToken)}`);
      assert.equal((await joiner.post('/console/invite', { token: invitationToken })).status, 302);
      const { id: inviteeId } = (await stack().db('people').where({ email: invitee }).first('id')) as { id: string };
      await visitor.get('/console/team');
      assert.equal((await visitor.post(`/console/team/${inviteeId}/remove`, {})).status, 302);
      // The operator changes the owner's plan at the CLI.
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-activity-'));
      const cli = (args: string[]): ReturnType<typeof quorumCli> =>
        quorumCli(args, dataDir, { QUORUM_SECRET_KEY: process.env.QUORUM_SECRET_KEY, QUORUM_FORM: form });
      let modeBy: { type: string; id: string | null; edge: string; ip: string | null };
      let modeId: string;
      try {
        const plan = await cli(['plan', 'assign', owner.email, 'pro']);
        assert.equal(plan.code, 0, plan.stderr);
        // A mode released and listed: by a key over MCP (Form B's tools), by the operator at the CLI (Form A).
        const spec = { ...modeTemplate(), name: `Logged ${randomUUID().slice(0, 6)}`, ticker: 'LOGD' };
        if (form === 'B') {
          const author = await create({ label: 'builder', scopes: ['modes:write'] });
          const client = new Client({ name: 'quorum-test', version: '1.0.0' });
          await client.connect(
            new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
              requestInit: { headers: { authorization: `Bearer ${String(author.body.secret)}` } },
            }),
          );
          const toolJson = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
            const first = ((await client.callTool({ name, arguments: args })) as CallToolResult).content[0] as { text: string };
            return JSON.parse(first.text) as Record<string, unknown>;
          };
          const saved = await toolJson('save_mode', { spec, release: true });
          modeId = String(saved.mode_id);
          assert.equal(saved.state, 'released', JSON.stringify(saved));
          const listed = await toolJson('list_mode', { mode_id: modeId });
          assert.deepEqual(listed.listing, { state: 'listed', version: 1 }, JSON.stringify(listed));
          await client.close();
          modeBy = { type: 'key', id: String(author.body.id), edge: 'mcp', ip: '127.0.0.1' };
        } else {
          const file = path.join(dataDir, 'mode.json');
          fs.writeFileSync(file, JSON.stringify(spec));
          const saved = await cli(['mode', 'save', file, '--org', owner.orgId, '--release', '--json']);
          assert.equal(saved.code, 0, saved.stderr);
          modeId = String((JSON.parse(saved.stdout) as { mode_id: string }).mode_id);
          const listed = await cli(['mode', 'publish', modeId]);
          assert.equal(listed.code, 0, listed.stderr);
          modeBy = { type: 'operator', id: null, edge: 'cli', ip: null };
        }
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }

      const everything: Record<string, unknown>[] = [];
      let after: string | undefined;
      const texts: string[] = [];
      for (let pages = 0; pages < 50; pages++) {
        const page = await call(api, 'GET', `/v1/organization/activity?limit=3${after ? `&after=${after}` : ''}`, { key: admin });
        assert.equal(page.status, 200, JSON.stringify(page.body));
        texts.push(JSON.stringify(page.body));
        everything.push(...(page.body.data as Record<string, unknown>[]));
        if (!page.body.has_more) break;
        after = String(page.body.last_id);
      }
      const ids = everything.map((r) => r.id);
      assert.equal(new Set(ids).size, ids.length, 'the cursor repeats no record');
      type Rec = {
        kind: string;
        subject: string | null;
        at: number;
        actor: { type: string; id: string | null; edge: string; ip: string | null };
      };
      const recs = everything as unknown as Rec[];
      const one = (kind: string, subject?: string): Rec => {
        const found = recs.filter((r) => r.kind === kind && (subject === undefined || r.subject === subject));
        assert.equal(found.length, 1, `one ${kind} ${subject ?? ''}: ${JSON.stringify(recs.map((r) => [r.kind, r.subject]))}`);
        return found[0];
      };
      const adminKeyId = (await stack().db('api_keys').where({ org_id: owner.orgId, mode: 'admin' }).first('id')) as { id: string };
      const personId = (await stack().db('people').where({ email: owner.email }).first('id')) as { id: string };
      const byAdmin = { type: 'key', id: adminKeyId.id, edge: 'api', ip: '127.0.0.1' };
      const byOwner = { type: 'person', id: personId.id, edge: 'console', ip: '127.0.0.1' };
      assert.deepEqual(one('key.created', adminKeyId.id).actor, byOwner);
      assert.deepEqual(one('key.created', revokedId).actor, byAdmin);
      assert.deepEqual(one('key.revoked', revokedId).actor, byAdmin);
      assert.ok(recs.filter((r) => r.kind === 'key.budget_set').length >= 3, 'the budget set at creation and twice after');
      assert.deepEqual(one('webhook_secret.rotated').actor, byOwner);
      assert.deepEqual(one('provider_key.set', 'openai').actor, byOwner);
      assert.deepEqual(one('provider_key.removed', 'openai').actor, byOwner);
      assert.deepEqual(one('member.invited', invitee).actor, byOwner);
      assert.deepEqual(one('plan.changed', personId.id).actor, { type: 'operator', id: null, edge: 'cli', ip: null });
      assert.deepEqual(one('member.removed', inviteeId).actor, byOwner);
      assert.deepEqual(one('mode.released', modeId).actor, modeBy);
      assert.deepEqual(one('mode.listed', modeId).actor, modeBy);
      for (const r of recs) assert.ok(r.at >= started - 600 && r.at <= Math.ceil(Date.now() / 1000), `when: ${r.at}`);

      // Filters: by kind, and by time (nothing before the organisation existed, nothing in the future).
      const revokes = await call(api, 'GET', '/v1/organization/activity?kind=key.revoked,webhook_secret.rotated', { key: admin });
      assert.deepEqual((revokes.body.data as Rec[]).map((r) => r.kind).sort(), ['key.revoked', 'webhook_secret.rotated']);
      const future = await call(api, 'GET', `/v1/organization/activity?since=${Math.floor(Date.now() / 1000) + 3600}`, { key: admin });
      assert.deepEqual(future.body.data, []);

      // The console's page lists the same records.
      const consolePage = await visitor.get('/console/activity');
      assert.equal(consolePage.status, 200);
      for (const kind of ['key.revoked', 'provider_key.removed', 'member.invited', 'plan.changed'])
        assert.ok(consolePage.body.includes(kind), `the console shows ${kind}`);
      texts.push(consolePage.body, (await visitor.get('/console/activity?kind=key.created')).body);
      // No secret made in this suite appears anywhere in what the log shows.
      assert.ok(secrets.length >= 6);
      for (const secret of secrets)
        for (const text of texts) assert.ok(!text.includes(secret), `a secret (${secret.slice(0, 12)}…) is in the log`);
      const stored = JSON.stringify(await stack().db('activity').where({ org_id: owner.orgId }), (_k, v: unknown) =>
        typeof v === 'bigint' ? v.toString() : v,
      );
      for (const secret of secrets) assert.ok(!stored.includes(secret), 'no secret is stored in the log');
    });

    it('alerts and retention by API (issue 53 item 5): the admin key reads and sets what the console does; bad input is 400 naming the field and changes nothing; any other key 403', async () => {
      const { db } = stack();
      // An organisation of its own: new (its settings the defaults), its admin key's requests per minute unspent.
      const { admin, orgId, visitor } = await ownerOf(api, secrets);
      const create = async (body: Record<string, unknown>): Promise<Reply> => {
        const reply = await call(api, 'POST', '/v1/organization/keys', { key: admin, body });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        secrets.push(String(reply.body.secret));
        return reply;
      };
      /** What Postgres holds, read here, not through the code under test. */
      const stored = async (): Promise<{ webhook: string | null; lowMicros: bigint; days: number | null }> => {
        const row = (await db('organisations as o')
          .join('balances as b', 'b.org_id', 'o.id')
          .where('o.id', orgId)
          .first('o.webhook_url', 'o.transcript_retention_days', 'b.low_balance_micros')) as {
          webhook_url: string | null;
          transcript_retention_days: number | null;
          low_balance_micros: bigint;
        };
        return { webhook: row.webhook_url, lowMicros: BigInt(row.low_balance_micros), days: row.transcript_retention_days };
      };
      const get = (path: string, key = admin): Promise<Reply> => call(api, 'GET', path, { key });
      const post = (path: string, body: unknown, key = admin): Promise<Reply> => call(api, 'POST', path, { key, body });
      const alerts = (webhook: string | null, low: number): Record<string, unknown> => ({
        object: 'organization.alerts',
        webhook_url: webhook,
        balance_low_usd: low,
      });
      const retention = (days: number | null): Record<string, unknown> => ({
        object: 'organization.retention',
        transcript_retention_days: days,
        effective_days: days ?? 30,
        default_days: 30,
        max_days: 3650,
      });
      const ok = (reply: Reply): Record<string, unknown> => {
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        return reply.body as Record<string, unknown>;
      };

      // A new organisation: no webhook, the $2 default threshold, the default retention (docs/retention.md).
      assert.deepEqual(await stored(), { webhook: null, lowMicros: 2_000_000n, days: null });
      assert.deepEqual(ok(await get('/v1/organization/alerts')), alerts(null, 2));
      assert.deepEqual(ok(await get('/v1/organization/retention')), retention(null));

      // Set, read back, and the console's page shows it.
      const hook = 'https://hooks.example.com/quorum?token=receiver-token';
      assert.deepEqual(ok(await post('/v1/organization/alerts', { webhook_url: hook, balance_low_usd: 7.25 })), alerts(hook, 7.25));
      assert.deepEqual(ok(await get('/v1/organization/alerts')), alerts(hook, 7.25));
      assert.deepEqual(await stored(), { webhook: hook, lowMicros: 7_250_000n, days: null });
      const page = (await visitor.get('/console/alerts')).body;
      assert.match(page, /name="webhook_url" type="url" value="https:\/\/hooks\.example\.com\/quorum\?token=receiver-token"/);
      assert.match(page, /name="balance_low_usd" value="7\.25"/);
      // One field: the other kept.
      assert.deepEqual(ok(await post('/v1/organization/alerts', { balance_low_usd: 0 })), alerts(hook, 0));
      for (const days of [7, 0, null]) {
        assert.deepEqual(ok(await post('/v1/organization/retention', { transcript_retention_days: days })), retention(days));
        assert.deepEqual(ok(await get('/v1/organization/retention')), retention(days));
        assert.deepEqual(await stored(), { webhook: hook, lowMicros: 0n, days });
      }
      assert.deepEqual(ok(await post('/v1/organization/retention', { transcript_retention_days: 3650 })), retention(3650));
      assert.deepEqual(ok(await post('/v1/organization/alerts', { webhook_url: null })), alerts(null, 0));
      assert.deepEqual(await stored(), { webhook: null, lowMicros: 0n, days: 3650 });

      // Each change is in the activity log, by the admin key over the API; the webhook by its host only.
      const logged = ok(await get('/v1/organization/activity?kind=alerts.changed,retention.changed&limit=200')).data as {
        kind: string;
        actor: Record<string, unknown>;
        detail: Record<string, unknown>;
      }[];
      const adminKey = (await db('api_keys').where({ org_id: orgId, mode: 'admin' }).first('id')) as { id: string };
      for (const r of logged) assert.deepEqual(r.actor, { type: 'key', id: adminKey.id, edge: 'api', ip: '127.0.0.1' });
      assert.deepEqual(
        logged
          .filter((r) => r.kind === 'retention.changed')
          .map((r) => [r.detail.from_days, r.detail.to_days])
          .reverse(),
        [
          [null, 7],
          [7, 0],
          [0, null],
          [null, 3650],
        ],
      );
      assert.deepEqual(
        logged
          .filter((r) => r.kind === 'alerts.changed')
          .map((r) => [r.detail.webhook_host, r.detail.balance_low_usd])
          .reverse(),
        [
          ['hooks.example.com', 7.25],
          ['hooks.example.com', 0],
          [null, 0],
        ],
      );
      assert.doesNotMatch(JSON.stringify(logged), /receiver-token/);

      // Bad input: 400 naming the field; nothing saved, nothing logged, even beside a good field.
      const before = await stored();
      const activityCount = async (): Promise<number> =>
        Number(((await db('activity').where({ org_id: orgId }).count('* as n').first()) as { n: string }).n);
      const loggedBefore = await activityCount();
      const bad: [string, unknown, string, string][] = [
        ['/v1/organization/alerts', { webhook_url: 'ftp://example.com/x' }, 'invalid_request', 'webhook_url'],
        ['/v1/organization/alerts', { webhook_url: 'https://user:pw@example.com/x' }, 'invalid_request', 'webhook_url'],
        ['/v1/organization/alerts', { webhook_url: 42 }, 'invalid_request', 'webhook_url'],
        ['/v1/organization/alerts', {}, 'invalid_request', 'webhook_url'],
        ['/v1/organization/alerts', { webhook_url: 'https://ok.example.com/', balance_low_usd: -1 }, 'invalid_request', 'balance_low_usd'],
        [
          '/v1/organization/alerts',
          { webhook_url: 'https://ok.example.com/', balance_low_usd: 0.0000001 },
          'invalid_request',
          'balance_low_usd',
        ],
        ['/v1/organization/alerts', { balance_low_usd: '5' }, 'invalid_request', 'balance_low_usd'],
        ['/v1/organization/alerts', { balance_low_usd: 1_000_001 }, 'invalid_request', 'balance_low_usd'],
        ['/v1/organization/alerts', { balance_low_usd: 1, threshold: 2 }, 'unknown_parameter', 'threshold'],
        ['/v1/organization/retention', {}, 'invalid_request', 'transcript_retention_days'],
        ['/v1/organization/retention', { transcript_retention_days: 3651 }, 'invalid_request', 'transcript_retention_days'],
        ['/v1/organization/retention', { transcript_retention_days: -1 }, 'invalid_request', 'transcript_retention_days'],
        ['/v1/organization/retention', { transcript_retention_days: 1.5 }, 'invalid_request', 'transcript_retention_days'],
        ['/v1/organization/retention', { transcript_retention_days: '7' }, 'invalid_request', 'transcript_retention_days'],
        ['/v1/organization/retention', { transcript_retention_days: 7, webhook_url: null }, 'unknown_parameter', 'webhook_url'],
      ];
      for (const [path, body, code, param] of bad) expectError(await post(path, body), 400, code, param);
      assert.deepEqual(await stored(), before, 'nothing saved by a refused body');
      assert.equal(await activityCount(), loggedBefore, 'nothing logged by a refused body');

      // Any other key of the organisation, of every scope: 403 insufficient_scope, nothing changed.
      const others = [String((await create({ label: 'every scope' })).body.secret), String((await create({ kind: 'test' })).body.secret)];
      for (const key of others) {
        for (const path of ['/v1/organization/alerts', '/v1/organization/alerts/events', '/v1/organization/retention'])
          expectError(await get(path, key), 403, 'insufficient_scope');
        expectError(await post('/v1/organization/alerts', { balance_low_usd: 1 }, key), 403, 'insufficient_scope');
        expectError(await post('/v1/organization/retention', { transcript_retention_days: 1 }, key), 403, 'insufficient_scope');
      }
      assert.deepEqual(await stored(), before, 'nothing saved by another key');

      // The threshold set by API is the one charges are judged against: a threshold above the balance, then a call,
      // raises balance.low; the events route lists it as Postgres holds it.
      await topUp(db, { orgId, amountMicros: 5_000_000n });
      const balance = ((await db('balances').where({ org_id: orgId }).first('balance_micros')) as { balance_micros: bigint })
        .balance_micros;
      const threshold = Number(BigInt(balance) + 1_000_000n) / 1_000_000;
      assert.deepEqual(ok(await post('/v1/organization/alerts', { balance_low_usd: threshold })), alerts(null, threshold));
      const lowEvents = async (): Promise<number> =>
        Number(((await db('account_events').where({ org_id: orgId, type: 'balance.low' }).count('* as n').first()) as { n: string }).n);
      const lowBefore = await lowEvents();
      const answered = await call(api, 'POST', '/v1/chat/completions', {
        key: others[0],
        body: { model: EXPRESS[form], messages: USER(`Name a prime number. ${randomUUID()}`) },
      });
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.equal(await lowEvents(), lowBefore + 1, 'the charge below the threshold set by API raised balance.low');
      const events = ok(await get('/v1/organization/alerts/events'));
      const rows = (await db('account_events')
        .where({ org_id: orgId })
        .orderBy('created_at', 'desc')
        .select('id', 'type', 'state', 'attempts', 'created_at')) as {
        id: string;
        type: string;
        state: string;
        attempts: number;
        created_at: Date;
      }[];
      const listed = events.data as Record<string, unknown>[];
      assert.deepEqual(
        listed.map(({ delivery: _d, attempts: _a, last_status: _s, last_error: _e, ...rest }) => rest),
        rows.map((r) => ({
          object: 'organization.account_event',
          id: r.id,
          type: r.type,
          created_at: Math.floor(r.created_at.getTime() / 1000),
        })),
      );
      // No webhook: nothing is sent. A dispatcher (another suite's, on the same database) may mark an event
      // `no_endpoint` between the two reads; nothing else moves.
      for (const [i, e] of listed.entries()) {
        assert.ok(e.delivery === rows[i].state || (e.delivery === 'pending' && rows[i].state === 'no_endpoint'), JSON.stringify(e));
        assert.deepEqual([e.last_status, e.last_error], [null, null]);
      }
      assert.ok(listed.some((e) => e.type === 'balance.low'));
      assert.deepEqual([events.object, events.has_more], ['list', false]);
    });
  });
}
