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

  it('lists the current configuration’s certification (a live one before a newer simulated one) with its tier, question set and attempts, null when none, in both Forms and through MCP; a simulated one only to its own organisation', async () => {
    const org = await newOrg();
    const other = await newOrg();
    const { strong, weak } = await demoModes(org.orgId);
    const now = Date.now();
    const liveAt = new Date(now - 2 * DAY);
    // Attempt 1's α = 0.02·6/π² = 0.0121585 (issue 38 item 3); its bound at α is below the plain 95% one.
    const alpha1 = 0.0121585;
    /** α_1 to the six places `comparable` rounds to. */
    const ALPHA1_SHOWN = 0.012159;
    const live = await certifiedRow({
      orgId: org.orgId,
      modeId: strong.A,
      ticker: strong.B,
      version: 1,
      verdict: {
        verdict: 'certified',
        lowerBound: 0.553,
        upperBound: 0.651,
        finishedAt: liveAt,
        attempt: { attempt: 1, alpha: alpha1, adjustedLowerBound: 0.5441 },
      },
    });
    // Newer, but a test key's: it never hides the live verdict.
    const hidden = await certifiedRow({
      orgId: org.orgId,
      modeId: strong.A,
      ticker: strong.B,
      version: 1,
      keyMode: 'test',
      verdict: { verdict: 'not_certified', lowerBound: 0.2, finishedAt: new Date(now - DAY) },
    });
    // The weak mode has only a simulated one: shown to its organisation, and marked; to no one else.
    const simAt = new Date(now - 3 * DAY);
    const simulated = await certifiedRow({
      orgId: org.orgId,
      modeId: weak.A,
      ticker: weak.B,
      version: 1,
      keyMode: 'test',
      verdict: { verdict: 'provisional', lowerBound: 0.45, upperBound: 0.55, finishedAt: simAt },
    });
    const strongHash = await configHash(strong.A, 1);
    const weakHash = await configHash(weak.A, 1);
    const buckets = (form: Form): Record<string, number> =>
      form === 'A' ? { light: 50, medium: 50, hard: 50 } : { easy: 50, medium: 50, hard: 50 };
    const scope = (form: Form) => ({
      tier: 'plus',
      question_set: { source: 'generated', id: null, questions: 150, per_bucket: buckets(form) },
    });
    const attempt = (batch: string, verdict: string, at: Date, interval: { low: number; high: number }, adjusted: number | null) => ({
      batch_id: batch,
      attempt: 1,
      state: 'completed',
      verdict,
      alpha: ALPHA1_SHOWN,
      interval,
      adjusted_lower_bound: adjusted,
      mode_version: 1,
      launched_at: new Date(at.getTime() - 1000).toISOString(),
      finished_at: at.toISOString(),
    });
    const expectStrong = (form: Form) => ({
      verdict: 'certified',
      ...scope(form),
      lower_bound: 0.553,
      interval: { low: 0.553, high: 0.651 },
      attempt: 1,
      alpha: ALPHA1_SHOWN,
      adjusted_lower_bound: 0.5441,
      batch_id: live,
      completed_at: liveAt.toISOString(),
      mode_version: 1,
      mode_config_hash: strongHash,
      simulated: false,
      attempts: [attempt(live, 'certified', liveAt, { low: 0.553, high: 0.651 }, 0.5441)],
      rule: undefined,
    });
    const expectWeak = (form: Form) => ({
      verdict: 'provisional',
      ...scope(form),
      lower_bound: 0.45,
      interval: { low: 0.45, high: 0.55 },
      attempt: 1,
      alpha: ALPHA1_SHOWN,
      // A row without a standard error has no bound at α to show.
      adjusted_lower_bound: null,
      batch_id: simulated,
      completed_at: simAt.toISOString(),
      mode_version: 1,
      mode_config_hash: weakHash,
      simulated: true,
      attempts: [attempt(simulated, 'provisional', simAt, { low: 0.45, high: 0.55 }, null)],
      rule: undefined,
    });
    /** The listing's own `rule` text is checked once for what it must say; the α figures are compared to 1e-6. */
    const comparable = (c: Record<string, unknown> | null | undefined): unknown => {
      if (!c) return c;
      assert.match(String(c.rule), /0\.02·6\/\(π²k²\)/);
      const round = (x: unknown): unknown => (typeof x === 'number' ? Math.round(x * 1e6) / 1e6 : x);
      return {
        ...c,
        rule: undefined,
        alpha: round(c.alpha),
        attempts: (c.attempts as Record<string, unknown>[]).map((a) => ({ ...a, alpha: round(a.alpha) })),
      };
    };

    for (const form of FORMS) {
      const listed = await listing(apis[form], org.ownerKey);
      assert.deepEqual(comparable(listed.get(strong[form])), expectStrong(form), `Form ${form}`);
      assert.deepEqual(comparable(listed.get(weak[form])), expectWeak(form), `Form ${form}`);
      assert.equal(listed.get(PANEL[form]), null, `Form ${form}: a mode never certified says null`);
      assert.ok(!JSON.stringify(listed.get(strong[form])).includes(hidden), 'a simulated attempt is no live attempt');

      // Another organisation sees the live certification, and none of the simulated ones (issue 38 item 4).
      const theirs = await listing(apis[form], other.ownerKey);
      assert.deepEqual(comparable(theirs.get(strong[form])), expectStrong(form), `Form ${form}, another organisation`);
      assert.equal(theirs.get(weak[form]), null, `Form ${form}: another organisation is shown no simulated verdict`);

      const client = await connect(apis[form], org.ownerKey);
      const tool = json(await client.callTool({ name: 'list_modes', arguments: {} }));
      await client.close();
      const viaMcp = new Map((tool.data as Entry[]).map((e) => [e.id, e.svc.certification]));
      assert.deepEqual(comparable(viaMcp.get(strong[form])), expectStrong(form), `list_modes, Form ${form}`);
      assert.deepEqual(comparable(viaMcp.get(weak[form])), expectWeak(form), `list_modes, Form ${form}`);
      assert.equal(viaMcp.get(PANEL[form]), null, `list_modes, Form ${form}`);
      const otherClient = await connect(apis[form], other.ownerKey);
      const theirTool = json(await otherClient.callTool({ name: 'list_modes', arguments: {} }));
      await otherClient.close();
      const theirMcp = new Map((theirTool.data as Entry[]).map((e) => [e.id, e.svc.certification]));
      assert.equal(theirMcp.get(weak[form]), null, `list_modes, Form ${form}, another organisation`);

      // The verdict is the certified tier's only (issue 38 item 5): the seating shows it on `plus` and on no other tier.
      const entry = ((await call(apis[form], 'GET', '/v1/models', { key: org.ownerKey })).body.data as Record<string, unknown>[]).find(
        (e) => e.id === strong[form],
      ) as { svc: { seating: Record<string, { certification: string | null }> } };
      for (const [tier, seating] of Object.entries(entry.svc.seating))
        assert.equal(seating.certification, tier === 'plus' ? 'certified' : null, `Form ${form}, tier ${tier}`);
    }

    // /openapi.json describes the field as served.
    const doc = await call(apis.B, 'GET', '/openapi.json', {});
    const schema = (doc.body.components as { schemas: Record<string, { anyOf: { properties?: Record<string, unknown> }[] }> }).schemas
      .ModeCertification;
    const described = schema.anyOf.find((s) => s.properties)?.properties ?? {};
    assert.deepEqual(Object.keys(described).sort(), Object.keys(expectStrong('B')).sort());

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
    assert.match(strongRow.replace(/\s+/g, ' '), /certified, lower bound 0\.553, plus tier, 2026-11-20/);
    // Every attempt on the configuration, with its verdict and α (issue 38 item 3): here the one, α_1 = 0.0122.
    assert.match(strongRow.replace(/\s+/g, ' '), /attempt 1<\/a>: certified, α 0\.0122/);
    assert.ok(strongRow.includes(`href="/console/runs/${runId}"`), strongRow);
    assert.match(rowOf(weak.B), /not certified yet/);
  });
});
