import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { findMode, upsertMode } from '../../../db/repositories/modes';
import type { Form } from '../../../domain/form';
import { call, FORMS, newOrg, PANEL, startApi, type Api } from '../api/helpers';
import { Visitor } from '../console/helpers';
import { connect, json } from '../mcp/helpers';
import { stack } from '../../harness/stack';
import { certifiedRow, demoModes } from './helpers';

/**
 * Issue 28 item 5: `/v1/models` (both Forms), MCP `list_modes` and the console's modes page carry each mode's latest
 * completed certification of the version the caller calls, null when it has none. Rows, not runs: what is read is
 * under test, not how a verdict is reached (test/stack/runs/certification.test.ts).
 */

type Entry = { id: string; svc: { certification: Record<string, unknown> | null } };

const DAY = 86_400_000;

async function configHash(modeId: string, version: number): Promise<string> {
  const row = (await stack().db('mode_versions').where({ mode_id: modeId, version }).first('config_hash')) as { config_hash: string };
  return row.config_hash;
}

async function listing(api: Api, key: string): Promise<Map<string, Entry['svc']['certification']>> {
  const r = await call(api, 'GET', '/v1/models', { key });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return new Map((r.body.data as Entry[]).map((e) => [e.id, e.svc.certification]));
}

describe('a mode’s certification where callers look: /v1/models, list_modes, the console', function () {
  this.timeout(60_000);
  const apis = {} as Record<Form, Api>;

  before(async () => {
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
  });

  it('lists the current version’s latest certification (a live one before a newer simulated one), null when none, in both Forms and through MCP', async () => {
    const org = await newOrg();
    const { strong, weak } = await demoModes(org.orgId);
    const now = Date.now();
    const liveAt = new Date(now - 2 * DAY);
    const live = await certifiedRow({
      orgId: org.orgId,
      modeId: strong.A,
      ticker: strong.B,
      version: 1,
      verdict: { verdict: 'certified', lowerBound: 0.553, finishedAt: liveAt },
    });
    // Newer, but a test key's: it never hides the live verdict.
    await certifiedRow({
      orgId: org.orgId,
      modeId: strong.A,
      ticker: strong.B,
      version: 1,
      keyMode: 'test',
      verdict: { verdict: 'not_certified', lowerBound: 0.2, finishedAt: new Date(now - DAY) },
    });
    // The weak mode has only a simulated one: shown, and marked.
    const simAt = new Date(now - 3 * DAY);
    const simulated = await certifiedRow({
      orgId: org.orgId,
      modeId: weak.A,
      ticker: weak.B,
      version: 1,
      keyMode: 'test',
      verdict: { verdict: 'provisional', lowerBound: 0.45, finishedAt: simAt },
    });
    const expectStrong = {
      verdict: 'certified',
      lower_bound: 0.553,
      batch_id: live,
      completed_at: liveAt.toISOString(),
      mode_version: 1,
      mode_config_hash: await configHash(strong.A, 1),
      simulated: false,
    };
    const expectWeak = {
      verdict: 'provisional',
      lower_bound: 0.45,
      batch_id: simulated,
      completed_at: simAt.toISOString(),
      mode_version: 1,
      mode_config_hash: await configHash(weak.A, 1),
      simulated: true,
    };

    for (const form of FORMS) {
      const listed = await listing(apis[form], org.ownerKey);
      assert.deepEqual(listed.get(strong[form]), expectStrong, `Form ${form}`);
      assert.deepEqual(listed.get(weak[form]), expectWeak, `Form ${form}`);
      assert.equal(listed.get(PANEL[form]), null, `Form ${form}: a mode never certified says null`);

      const client = await connect(apis[form], org.ownerKey);
      const tool = json(await client.callTool({ name: 'list_modes', arguments: {} }));
      await client.close();
      const viaMcp = new Map((tool.data as Entry[]).map((e) => [e.id, e.svc.certification]));
      assert.deepEqual(viaMcp.get(strong[form]), expectStrong, `list_modes, Form ${form}`);
      assert.deepEqual(viaMcp.get(weak[form]), expectWeak, `list_modes, Form ${form}`);
      assert.equal(viaMcp.get(PANEL[form]), null, `list_modes, Form ${form}`);
    }

    // /openapi.json describes the field as served.
    const doc = await call(apis.B, 'GET', '/openapi.json', {});
    const schema = (doc.body.components as { schemas: Record<string, { anyOf: { properties?: Record<string, unknown> }[] }> }).schemas
      .ModeCertification;
    const described = schema.anyOf.find((s) => s.properties)?.properties ?? {};
    assert.deepEqual(Object.keys(described).sort(), Object.keys(expectStrong).sort());

    // A new release: version 1's verdict says nothing of version 2's panel.
    const mode = await findMode(stack().db, { orgId: org.orgId, form: 'A', model: strong.A });
    assert.ok(mode);
    const fees = mode.config.fees;
    const released = await upsertMode(stack().db, {
      ...mode,
      config: { ...mode.config, fees: { ...fees, expressSurchargeMicros: fees.expressSurchargeMicros + 1 } },
    });
    assert.equal(released.version, 2);
    for (const form of FORMS) assert.equal((await listing(apis[form], org.ownerKey)).get(strong[form]), null, `Form ${form}`);
  });

  it('the console’s modes page shows the verdict, lower bound and date, with a link to the run', async () => {
    const v = new Visitor(apis.B);
    const email = `c-${randomUUID().slice(0, 8)}@example.com`;
    await v.signUp({ email, password: 'correct horse battery staple', org: `Certified ${randomUUID().slice(0, 6)}` });
    const { org_id: orgId } = (await stack()
      .db('people as p')
      .join('memberships as m', 'm.person_id', 'p.id')
      .whereRaw('lower(p.email) = ?', [email])
      .first('m.org_id')) as { org_id: string };
    const { strong, weak } = await demoModes(orgId);
    const runId = await certifiedRow({
      orgId,
      modeId: strong.A,
      ticker: strong.B,
      version: 1,
      verdict: { verdict: 'certified', lowerBound: 0.5534, finishedAt: new Date('2026-11-20T10:00:00Z') },
    });

    const page = await v.get('/console/modes');
    assert.equal(page.status, 200);
    const rowOf = (ticker: string): string => {
      const at = page.body.indexOf(`<code>${ticker}</code>`);
      assert.ok(at >= 0, `no row for ${ticker}`);
      return page.body.slice(at, page.body.indexOf('</tr>', at));
    };
    const strongRow = rowOf(strong.B);
    assert.match(strongRow.replace(/\s+/g, ' '), /certified, lower bound 0\.553, 2026-11-20/);
    assert.ok(strongRow.includes(`href="/console/runs/${runId}"`), strongRow);
    assert.match(rowOf(weak.B), /not certified yet/);
  });
});
