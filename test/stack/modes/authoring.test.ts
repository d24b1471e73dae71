import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { loadConfig } from '../../../infra/config';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { releaseMode, reviewListing, saveMode, type AuthoringDeps } from '../../../operations/authoring/modes';
import type { KeyPrincipal } from '../../../operations/principal';
import { revokeApiKey } from '../../../db/repositories/api-keys';
import { readAuthoredMode, releaseDraft, saveDraft, writeListing } from '../../../db/repositories/mode-authoring';
import { findMode } from '../../../db/repositories/modes';
import { QuorumError } from '../../../domain/errors';
import { modeTemplate, validateMode } from '../../../domain/mode-spec';
import type { Form } from '../../../domain/form';
import { createEngines } from '../../../engines';
import { call, FORMS, keyPrincipal, newKey, newOrg, startApi, USER, type Api, type TestOrg } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { quorumCli } from '../../harness/cli';
import { limitedDb } from '../../harness/limited-db';
import { stack } from '../../harness/stack';
import { certifiedRow } from '../runs/helpers';
import { settingsOf } from '../../harness/settings';

type Spec = Record<string, unknown>;
type ToolJson = Record<string, unknown> & {
  error?: { code: string; message: string };
  http_status?: number;
  svc?: Record<string, unknown>;
};

/** A spec that passes, with a fresh name (names are unique per organisation) and the given ticker. */
function spec(ticker: string, over: Spec = {}): Spec {
  return { ...modeTemplate(), name: `Panel ${randomUUID().slice(0, 6)}`, ticker, ...over };
}

async function connect(api: Api, key: string): Promise<Client> {
  const client = new Client({ name: 'quorum-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  );
  return client;
}

async function tool(client: Client, name: string, args: Record<string, unknown>): Promise<ToolJson> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0] as { text: string };
  const body = JSON.parse(first.text) as ToolJson;
  assert.equal(result.isError === true, body.error !== undefined, JSON.stringify(body));
  return body;
}

function refusedWith(body: ToolJson, code: string, status: number): void {
  assert.equal(body.error?.code, code, JSON.stringify(body));
  assert.equal(body.http_status, status, JSON.stringify(body));
}

describe('modes that organisations build', function () {
  this.timeout(180_000);
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> };
  let dir: string;

  before(async () => {
    workers = await startProductWorkers();
    for (const form of FORMS) apis[form] = await startApi(form);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-modes-'));
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const cli = (args: string[], form: Form = 'B') => quorumCli(args, dir, { QUORUM_FORM: form });
  const file = (name: string, body: unknown): string => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, JSON.stringify(body, null, 2));
    return p;
  };
  const openai = (form: Form, key: string) => new OpenAI({ baseURL: `${apis[form].url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });
  const ask = async (form: Form, key: string, model: string) =>
    (await openai(form, key).chat.completions.create({
      model,
      messages: USER(`Compare two sorting algorithms step by step. ${randomUUID()}`),
    })) as unknown as {
      model: string;
      svc: Record<string, unknown>;
    };

  it('an organisation builds a mode with the CLI, releases it, calls it, its lab draft, a second release, and lists it', async () => {
    const author = await newOrg();
    const other = await newOrg();

    // The template the CLI prints passes as it is.
    const template = await cli(['mode', 'template', '--json']);
    assert.equal((await cli(['mode', 'validate', file('template.json', JSON.parse(template.stdout)), '--org', author.orgId])).code, 0);

    // Every refusal at once, with its code, until the spec passes.
    const bad = file('bad.json', { ...modeTemplate(), name: 'x', ticker: 'ab', rounds: 9 });
    const refused = await cli(['mode', 'validate', bad, '--org', author.orgId, '--json']);
    assert.equal(refused.code, 1);
    const codes = (JSON.parse(refused.stdout) as { refusals: { code: string }[] }).refusals.map((r) => r.code);
    assert.deepEqual(codes, ['name_too_short', 'ticker_invalid', 'invalid_request']);
    const save = await cli(['mode', 'save', bad, '--org', author.orgId]);
    assert.equal(save.code, 1);
    assert.match(save.stderr, /mode_invalid/);
    assert.match(save.stderr, /name_too_short at name/);

    const good = file('good.json', spec('CODE'));
    assert.equal((await cli(['mode', 'validate', good, '--org', author.orgId])).code, 0);
    const draft = JSON.parse((await cli(['mode', 'save', good, '--org', author.orgId, '--json'])).stdout) as Record<string, unknown>;
    assert.equal(draft.state, 'draft');
    assert.equal(draft.version, 0);
    const ticker = String(draft.ticker);
    assert.match(ticker, /^[A-Z0-9]{2,8}:CODE$/);

    // A draft is callable as its lab version by its author only; the ticker itself is not published yet.
    assert.ok((await ask('B', author.ownerKey, `${ticker}:LAB`)).svc.request_id);
    const stranger = await call(apis.B, 'POST', '/v1/chat/completions', {
      key: other.ownerKey,
      body: { model: `${ticker}:LAB`, messages: USER('hi') },
    });
    assert.equal(stranger.status, 403);
    assert.equal(stranger.body.error?.code, 'lab_not_available');
    const unreleased = await call(apis.B, 'POST', '/v1/chat/completions', {
      key: author.ownerKey,
      body: { model: ticker, messages: USER('hi') },
    });
    assert.equal(unreleased.body.error?.code, 'mode_not_published');

    // Release 1, called through the official client in both Forms.
    const v1 = JSON.parse((await cli(['mode', 'release', ticker, '--json'])).stdout) as {
      version: number;
      mode_config_hash: string;
      mode_id: string;
    };
    assert.equal(v1.version, 1);
    const first = await ask('A', author.ownerKey, v1.mode_id);
    assert.equal(first.svc.mode_config_hash, v1.mode_config_hash);
    assert.equal((await ask('B', author.ownerKey, ticker)).model, ticker);
    const models = await call(apis.B, 'GET', '/v1/models', { key: author.ownerKey });
    assert.ok(
      (models.body.data as { id: string }[]).some((m) => m.id === ticker),
      'a released mode is entitled to its own organisation',
    );

    // A new draft (express only) is what the lab runs; the release still runs version 1.
    const express = file('express.json', { ...JSON.parse(fs.readFileSync(good, 'utf8')), express: 'always' });
    await cli(['mode', 'save', express, '--mode', ticker]);
    assert.equal((await ask('B', author.ownerKey, `${ticker}:LAB`)).svc.seats, 1);
    assert.equal((await ask('B', author.ownerKey, ticker)).svc.seats, 3);

    // Invited, another organisation may call the lab version.
    assert.equal((await cli(['mode', 'invite', ticker, '--org', other.orgId])).code, 0);
    assert.equal((await ask('B', other.ownerKey, `${ticker}:LAB`)).svc.seats, 1);

    // Release 2: a new mode_config_hash, and calls run it.
    const v2 = JSON.parse((await cli(['mode', 'release', v1.mode_id, '--json'])).stdout) as { version: number; mode_config_hash: string };
    assert.equal(v2.version, 2);
    assert.notEqual(v2.mode_config_hash, v1.mode_config_hash);
    assert.equal((await ask('A', author.ownerKey, v1.mode_id)).svc.mode_config_hash, v2.mode_config_hash);

    // Not listed: invisible to the other organisation; listed: in its model list and callable.
    const before = await call(apis.B, 'GET', '/v1/models', { key: other.ownerKey });
    assert.ok(!(before.body.data as { id: string }[]).some((m) => m.id === ticker));
    const listed = JSON.parse((await cli(['mode', 'publish', ticker, '--json'])).stdout) as { listing: { state: string; version: number } };
    assert.deepEqual(listed.listing, { state: 'listed', version: 2 });
    const after = await call(apis.B, 'GET', '/v1/models', { key: other.ownerKey });
    assert.ok((after.body.data as { id: string }[]).some((m) => m.id === ticker));
    assert.equal((await ask('B', other.ownerKey, ticker)).svc.mode, ticker);

    // Delisted in review: Form B says the mode is no longer permitted to the other organisation.
    assert.equal((await cli(['mode', 'review', ticker, '--delist', '--note', 'test'])).code, 0);
    const gone = await call(apis.B, 'POST', '/v1/estimate', { key: other.ownerKey, body: { model: ticker, messages: USER('hi') } });
    assert.equal(gone.status, 403);
    assert.equal(gone.body.error?.code, 'mode_not_permitted');
    const list = JSON.parse((await cli(['mode', 'list', '--org', author.orgId, '--json'])).stdout) as {
      data: { ticker: string; listing: { state: string } }[];
    };
    assert.equal(list.data.find((m) => m.ticker === ticker)?.listing.state, 'delisted');
  });

  describe('the mode-builder tools (Form B MCP), each code', () => {
    let org: TestOrg;
    let client: Client;
    before(async () => {
      org = await newOrg();
      client = await connect(apis.B, org.ownerKey);
    });
    after(() => client.close());

    it('validate_mode lists every refusal in body.error, ticker_taken with a suggestion; nothing is saved', async () => {
      const saved = await tool(client, 'save_mode', { spec: spec('TAKN') });
      assert.equal(saved.state, 'draft');
      const checked = await tool(client, 'validate_mode', { spec: { ...spec('TAKN'), use_when: '' } });
      assert.equal(checked.valid, false);
      const entries = checked.refusals as {
        http_status: number;
        body: { error: { code: string; param: string; suggested_ticker?: string } };
      }[];
      assert.deepEqual(
        entries.map((e) => e.body.error.code),
        ['use_when_invalid', 'ticker_taken'],
      );
      assert.equal(entries[1].body.error.suggested_ticker, 'TAKO');
      assert.equal(entries[1].http_status, 409);
      assert.equal((await tool(client, 'validate_mode', { spec: spec('FREE') })).valid, true);
    });

    it('save_mode: mode_invalid (422) with svc.refusals, ticker_taken (409) without a suggestion, draft_required, name_taken, draft_pending', async () => {
      const invalid = await tool(client, 'save_mode', { spec: { ...spec('BADD'), fidelity: 'max', rounds: 0 } });
      refusedWith(invalid, 'mode_invalid', 422);
      const refusals = invalid.svc?.refusals as { body: { error: { code: string } } }[];
      assert.deepEqual(
        refusals.map((r) => r.body.error.code),
        ['invalid_request', 'fidelity_retired'],
      );
      const taken = await tool(client, 'save_mode', { spec: spec('TKNB') }).then(() => tool(client, 'save_mode', { spec: spec('TKNB') }));
      refusedWith(taken, 'ticker_taken', 409);
      assert.equal(JSON.stringify(taken).includes('suggested_ticker'), false);
      refusedWith(await tool(client, 'save_mode', {}), 'draft_required', 400);
      refusedWith(await tool(client, 'save_mode', { mode_id: 'nope' }), 'draft_required', 400);

      const named = spec('NAMA');
      await tool(client, 'save_mode', { spec: named });
      refusedWith(await tool(client, 'save_mode', { spec: { ...named, ticker: 'NAMB' } }), 'draft_pending', 409);
      const released = await tool(client, 'save_mode', { spec: spec('NAMC'), release: true });
      assert.equal(released.state, 'released');
      refusedWith(await tool(client, 'save_mode', { spec: { ...spec('NAMD'), name: released.name } }), 'name_taken', 409);
    });

    it('a quorum through the tools: refused at its path when out of range, stored in the released configuration (issue 40)', async () => {
      const checked = await tool(client, 'validate_mode', { spec: spec('QRMA', { quorum: 4, grace_ms: 500 }) });
      assert.equal(checked.valid, false);
      const entries = checked.refusals as { body: { error: { code: string; param: string } } }[];
      assert.deepEqual(
        entries.map((e) => [e.body.error.code, e.body.error.param]),
        [['quorum_invalid', 'quorum']],
      );
      const released = await tool(client, 'save_mode', { spec: spec('QRMB', { quorum: 2, grace_ms: 1_500 }), release: true });
      assert.equal(released.state, 'released', JSON.stringify(released));
      const stored = await findMode(stack().db, { orgId: org.orgId, form: 'B', model: String(released.ticker) });
      assert.deepEqual(stored?.config.quorum, { seats: 2, graceMs: 1_500 });
    });

    it('an aggregation through the tools: each refusal at its path, stored in the released configuration with its defaults (issue 52)', async () => {
      const checked = await tool(client, 'validate_mode', {
        spec: spec('AGGA', { aggregation: { method: 'select', ballot: true, first_wave: 2 }, quorum: 2 }),
      });
      assert.equal(checked.valid, false);
      const entries = checked.refusals as { body: { error: { code: string; param: string } } }[];
      assert.deepEqual(
        entries.map((e) => [e.body.error.code, e.body.error.param]),
        [
          ['aggregation_invalid', 'aggregation.ballot'],
          ['aggregation_conflict', 'aggregation.first_wave'],
          ['aggregation_conflict', 'skip_synthesis_when_converged'],
        ],
      );
      const released = await tool(client, 'save_mode', {
        spec: spec('AGGB', { aggregation: { method: 'vote', tie_break: 'first' }, skip_synthesis_when_converged: undefined }),
        release: true,
      });
      assert.equal(released.state, 'released', JSON.stringify(released));
      const stored = await findMode(stack().db, { orgId: org.orgId, form: 'B', model: String(released.ticker) });
      assert.deepEqual(stored?.config.aggregation, { method: 'vote', prose: 'verbatim', tieBreak: 'first', ballot: true });
    });

    it('who may change what: test key, limited key, missing scope, another organisation’s mode, a platform mode, no owner', async () => {
      const mine = await tool(client, 'save_mode', { spec: spec('WHOA'), release: true });
      const asKey = async (key: string, args: Record<string, unknown>): Promise<ToolJson> => {
        const c = await connect(apis.B, key);
        try {
          return await tool(c, 'save_mode', args);
        } finally {
          await c.close();
        }
      };
      refusedWith(await asKey(await newKey(org.orgId, { keyKind: 'test' }), { spec: spec('TEST') }), 'test_key_not_allowed', 403);
      const limited = await newKey(org.orgId, { allowedModes: [String(mine.mode_id)] });
      refusedWith(await asKey(limited, { spec: spec('LIMT') }), 'mode_not_allowed', 403);
      const ok = await asKey(limited, { spec: spec('WHOA', { name: mine.name }), mode_id: mine.mode_id });
      assert.equal(ok.state, 'released');
      refusedWith(await asKey(await newKey(org.orgId, { scopes: ['completions'] }), { spec: spec('SCOP') }), 'insufficient_scope', 403);

      const stranger = await newOrg();
      refusedWith(await asKey(stranger.ownerKey, { spec: spec('WHOA'), mode_id: mine.mode_id }), 'mode_not_found', 404);
      refusedWith(await asKey(stranger.ownerKey, { spec: spec('PANL'), mode_id: 'QRM:PANL' }), 'forbidden', 403);

      const ownerless = await newOrg();
      const spare = await newKey(ownerless.orgId);
      await revokeApiKey(stack().db, ownerless.keyId);
      refusedWith(await asKey(spare, { spec: spec('ORPH') }), 'org_owner_missing', 409);
    });

    it('releases: no_draft, draft_unvalidated, conflict, and a refused draft answers its own check’s code', async () => {
      const m = await tool(client, 'save_mode', { spec: spec('RELA'), release: true });
      refusedWith(await tool(client, 'save_mode', { mode_id: m.mode_id, release: true }), 'no_draft', 409);
      refusedWith(await tool(client, 'save_mode', { spec: spec('RELZ', { name: m.name }), mode_id: m.mode_id }), 'conflict', 409);

      // A draft stored without a spec (written by hand) cannot be re-checked.
      await tool(client, 'save_mode', { spec: spec('RELA', { name: m.name }), mode_id: m.mode_id });
      await stack().db('modes').where({ id: m.mode_id }).update({ draft_spec: null });
      refusedWith(await tool(client, 'save_mode', { mode_id: m.mode_id, release: true }), 'draft_unvalidated', 409);

      // The price floor rose after the draft was saved: the release answers the check's own code.
      const d = await tool(client, 'save_mode', { spec: spec('RELA', { name: m.name, fees: { per_mtok_usd: 0.06 } }), mode_id: m.mode_id });
      assert.equal(d.state, 'released');
      await stack()
        .db('platform_settings')
        .insert({ key: 'price_floor', value: JSON.stringify({ perMtokUsd: 0.1, surchargeUsd: 0.0005 }) });
      try {
        const r = await tool(client, 'save_mode', { mode_id: m.mode_id, release: true });
        refusedWith(r, 'price_below_floor', 400);
        assert.equal((r.svc?.refusals as unknown[]).length, 1);
      } finally {
        await stack().db('platform_settings').where({ key: 'price_floor' }).del();
      }
    });

    it('list_mode: mode_not_released, listed, rejected, delisted, published_version_uncertified, name_taken', async () => {
      const d = await tool(client, 'save_mode', { spec: spec('LSTA') });
      refusedWith(await tool(client, 'list_mode', { mode_id: d.mode_id }), 'mode_not_released', 409);
      await tool(client, 'save_mode', { mode_id: d.mode_id, release: true });
      const listed = await tool(client, 'list_mode', { mode_id: d.ticker });
      assert.deepEqual(listed.listing, { state: 'listed', version: 1 });

      const deps = authoringDeps();
      await reviewListing(deps, String(d.mode_id), 'reject', 'misleading description');
      refusedWith(await tool(client, 'list_mode', { mode_id: d.mode_id }), 'listing_rejected', 409);
      await reviewListing(deps, String(d.mode_id), 'delist');
      refusedWith(await tool(client, 'list_mode', { mode_id: d.mode_id }), 'listing_delisted', 409);
      await reviewListing(deps, String(d.mode_id), 'approve');

      // Certified at version 1 (a completed certification's row), then released again: version 2 is not the certified one.
      await certifiedRow({ orgId: org.orgId, modeId: String(d.mode_id), ticker: String(d.ticker), version: 1 });
      await tool(client, 'save_mode', { spec: spec('LSTA', { name: listed.name, rounds: 1 }), mode_id: d.mode_id, release: true });
      refusedWith(await tool(client, 'list_mode', { mode_id: d.mode_id }), 'published_version_uncertified', 409);

      // Spec 02: name_taken is the organisation's own namesake. Another organisation may list a mode of the same name.
      const rival = await newOrg();
      const rc = await connect(apis.B, rival.ownerKey);
      const theirs = await tool(rc, 'save_mode', { spec: spec('RIVL', { name: listed.name }), release: true });
      assert.deepEqual((await tool(rc, 'list_mode', { mode_id: theirs.mode_id })).listing, { state: 'listed', version: 1 });
      // A namesake in the organisation itself (written behind save_mode's own check, as a concurrent save could) is refused.
      const twin = await tool(rc, 'save_mode', { spec: spec('TWIN'), release: true });
      await stack()
        .db('modes')
        .where({ id: twin.mode_id })
        .update({ name: String(listed.name).toUpperCase() });
      refusedWith(await tool(rc, 'list_mode', { mode_id: twin.mode_id }), 'name_taken', 409);
      await rc.close();
    });

    it('unreadable dependencies: pricing_unavailable, save_unavailable, listing_read_failed (nothing written)', async () => {
      const noFloor = await limitedDb('modes_no_floor', 'revoke select on platform_settings from ROLE');
      const noWrite = await limitedDb('modes_no_write', 'revoke insert on modes from ROLE; revoke select on runs from ROLE');
      const a = await startApi('B', { db: noFloor });
      const b = await startApi('B', { db: noWrite });
      try {
        const ca = await connect(a, org.ownerKey);
        refusedWith(await tool(ca, 'save_mode', { spec: spec('PRIC') }), 'pricing_unavailable', 503);
        await ca.close();
        const cb = await connect(b, org.ownerKey);
        const count = async () => Number((await stack().db('modes').where({ org_id: org.orgId }).count<{ n: string }[]>('* as n'))[0].n);
        const before = await count();
        refusedWith(await tool(cb, 'save_mode', { spec: spec('SAVE') }), 'save_unavailable', 503);
        assert.equal(await count(), before);
        const released = await tool(client, 'save_mode', { spec: spec('LRDF'), release: true });
        refusedWith(await tool(cb, 'list_mode', { mode_id: released.mode_id }), 'listing_read_failed', 503);
        assert.equal((await readAuthoredMode(stack().db, String(released.mode_id)))?.listingState, null);
        await cb.close();
      } finally {
        await a.close();
        await b.close();
        await noFloor.destroy();
        await noWrite.destroy();
      }
    });
  });

  describe('races', () => {
    let org: TestOrg;
    let author: KeyPrincipal;
    before(async () => {
      org = await newOrg();
      author = await keyPrincipal(await newKey(org.orgId), 'mcp');
    });

    it('two releases of one draft at once: one new version, the other answered draft_changed or no_draft', async () => {
      const deps = authoringDeps();
      for (let i = 0; i < 3; i++) {
        const saved = await saveMode(deps, author, { spec: spec(`RAC${'ABC'[i]}`) });
        const outcomes = await Promise.allSettled([releaseMode(deps, author, saved.mode_id), releaseMode(deps, author, saved.mode_id)]);
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        const lost = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as QuorumError] : []));
        assert.equal(won.length, 1, JSON.stringify(outcomes));
        assert.ok(['draft_changed', 'no_draft'].includes(lost[0].code), lost[0].message);
        const versions = await stack().db('mode_versions').where({ mode_id: saved.mode_id }).count<{ n: string }[]>('* as n');
        assert.equal(Number(versions[0].n), 1);
      }
    });

    it('a save during a release: the release that read the older draft is draft_changed, and the newer draft is kept', async () => {
      const deps = authoringDeps();
      const first = spec('SAVR');
      const saved = await saveMode(deps, author, { spec: first });
      const read = (await readAuthoredMode(stack().db, saved.mode_id))!;
      const second = { ...first, rounds: 1 };
      const compiled = validateMode(second, { ...validationContext(), tickerTaken: () => false });
      assert.ok(compiled.ok);
      await saveDraft(stack().db, saved.mode_id, second, compiled.mode.config);
      await assert.rejects(
        releaseDraft(stack().db, {
          modeId: saved.mode_id,
          revision: read.draftRevision,
          spec: first,
          mode: compiled.mode,
          ticker: read.ticker,
        }),
        (err: QuorumError) => err.code === 'draft_changed',
      );
      const after = (await readAuthoredMode(stack().db, saved.mode_id))!;
      assert.deepEqual(after.draftSpec, second);
      assert.equal(after.currentVersion, 0);
      // Released now, it is the newer draft that becomes version 1.
      const v1 = await releaseMode(deps, author, saved.mode_id);
      assert.equal(v1.version, 1);
      const stored = await stack().db('mode_versions').where({ mode_id: saved.mode_id, version: 1 }).first('spec');
      assert.equal((stored.spec as { rounds: number }).rounds, 1);
    });

    it('a listing written over a stale read is listing_changed', async () => {
      const deps = authoringDeps();
      const m = await saveMode(deps, author, { spec: spec('LCHG'), release: true });
      const read = (await readAuthoredMode(stack().db, m.mode_id))!;
      await reviewListing(deps, m.mode_id, 'approve');
      await assert.rejects(
        writeListing(stack().db, { modeId: m.mode_id, revision: read.listingRevision, state: 'listed', version: 1 }),
        (err: QuorumError) => err.code === 'listing_changed',
      );
    });
  });
});

function authoringDeps(): AuthoringDeps {
  return { db: stack().db, form: 'B', engines: createEngines({ ...settingsOf(process.env) }), config: loadConfig() };
}

function validationContext() {
  const engines = createEngines({ ...settingsOf(process.env) });
  return {
    form: 'B' as const,
    find: (id: string) => engines.find(id),
    canRun: () => true,
    floor: { perMtokUsd: 0.05, surchargeUsd: 0.0005 },
    via: 'key' as const,
    hasOrg: true,
    system: false,
  };
}
