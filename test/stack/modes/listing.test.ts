import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { modeTemplate } from '../../../domain/mode-spec';
import type { Form } from '../../../domain/form';
import { call, FORMS, newOrg, startApi, USER, type Api, type TestOrg } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { connect, json, refusal } from '../mcp/helpers';
import { stack } from '../../harness/stack';
import { certifiedRow } from '../runs/helpers';

/**
 * Issue 26 item 10 (DESIGN §10): other organisations call a listed mode's listed version; the owner's organisation
 * gets the latest release. Releasing a version never changes what the marketplace serves; listing it does.
 */

interface Released {
  mode_id: string;
  ticker: string;
  version: number;
  mode_config_hash: string;
}

/** Two releases that differ where a caller can see it: v2 answers express-only and costs more. */
const V1_FEES = { surcharge_by_depth_usd: { light: 0.002, medium: 0.005, deep: 0.01 }, express_surcharge_usd: 0.001, per_mtok_usd: 0.5 };
const V2_FEES = { surcharge_by_depth_usd: { light: 0.003, medium: 0.007, deep: 0.02 }, express_surcharge_usd: 0.002, per_mtok_usd: 0.8 };

describe('the marketplace serves the listed version', function () {
  this.timeout(180_000);
  const apis = {} as Record<Form, Api>;
  let workers: { stop(): Promise<void> };
  before(async () => {
    workers = await startProductWorkers();
    for (const form of FORMS) apis[form] = await startApi(form);
  });
  after(async () => {
    for (const form of FORMS) await apis[form].close();
    await workers.stop();
  });

  async function tool(client: Client, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const result = await client.callTool({ name, arguments: args });
    assert.ok(!result.isError, JSON.stringify(result));
    return json(result);
  }

  /** What each Form shows a caller of the mode: the panel's hash (Form A), seats, and the stored receipt's version. */
  async function called(org: TestOrg, mode: Released): Promise<{ hashA: unknown; versionA: number; seatsB: unknown; versionB: number }> {
    const prompt = USER(`Compare two sorting algorithms step by step, with their worst cases. ${randomUUID()}`);
    const a = await call(apis.A, 'POST', '/v1/chat/completions', { key: org.ownerKey, body: { model: mode.mode_id, messages: prompt } });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const b = await call(apis.B, 'POST', '/v1/chat/completions', { key: org.ownerKey, body: { model: mode.ticker, messages: prompt } });
    assert.equal(b.status, 200, JSON.stringify(b.body));
    const receipt = await call(apis.A, 'GET', `/v1/receipts/${String(a.body.svc?.request_id)}`, { key: org.ownerKey });
    assert.equal((receipt.body.receipt as { mode_config_hash: string }).mode_config_hash, a.body.svc?.mode_config_hash);
    // Form B's receipt has no hash field: the stored receipt says which version ran.
    const stored = async (requestId: unknown) =>
      (
        (await stack()
          .db('receipts')
          .where({ request_id: String(requestId) })
          .first('mode_version')) as { mode_version: number }
      ).mode_version;
    return {
      hashA: a.body.svc?.mode_config_hash,
      versionA: await stored(a.body.svc?.request_id),
      seatsB: b.body.svc?.seats,
      versionB: await stored(b.body.svc?.request_id),
    };
  }

  /** The mode's entry in each Form's `/v1/models` for this caller. */
  async function listed(org: TestOrg, mode: Released): Promise<{ a: Record<string, unknown>; b: Record<string, unknown> }> {
    const find = async (form: Form, id: string) => {
      const r = await call(apis[form], 'GET', '/v1/models', { key: org.ownerKey });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const entry = (r.body.data as { id: string; svc: Record<string, unknown> }[]).find((m) => m.id === id);
      assert.ok(entry, `${id} in ${form}'s /v1/models`);
      return entry.svc;
    };
    return { a: await find('A', mode.mode_id), b: await find('B', mode.ticker) };
  }

  /** What a release with these fees and express policy must show in /v1/models, from the spec alone. */
  function expectedListing(fees: typeof V1_FEES, express: string): { surcharges: unknown; perMtok: number; deliberates: boolean } {
    return { surcharges: fees.surcharge_by_depth_usd, perMtok: fees.per_mtok_usd, deliberates: express !== 'always' };
  }

  function assertListing(seen: { a: Record<string, unknown>; b: Record<string, unknown> }, want: ReturnType<typeof expectedListing>): void {
    assert.deepEqual((seen.a.pricing as { q_surcharge_by_depth: unknown }).q_surcharge_by_depth, want.surcharges);
    assert.match(String((seen.b.pricing as { rate_note: string }).rate_note), new RegExp(`configured ${want.perMtok} USD per 1M input`));
    assert.equal(seen.b.includes_deliberation, want.deliberates);
  }

  async function certifiedAt(org: TestOrg, mode: Released, version: number): Promise<void> {
    await certifiedRow({ orgId: org.orgId, modeId: mode.mode_id, ticker: mode.ticker, version });
  }

  it('another organisation calls and pays for the listed v1 after v2 is released; the owner gets v2; listing v2 moves everyone', async () => {
    const owner = await newOrg();
    const other = await newOrg();
    const client = await connect(apis.B, owner.ownerKey);
    try {
      const name = `Listed ${randomUUID().slice(0, 6)}`;
      const v1Spec = { ...modeTemplate(), name, ticker: 'LSTV', fees: V1_FEES, express: 'auto' };
      const v1 = (await tool(client, 'save_mode', { spec: v1Spec, release: true })) as unknown as Released;
      assert.equal(v1.version, 1);
      assert.deepEqual((await tool(client, 'list_mode', { mode_id: v1.mode_id })).listing, { state: 'listed', version: 1 });
      await certifiedAt(owner, v1, 1);

      // v2 released, not listed: express-only, dearer.
      const v2 = (await tool(client, 'save_mode', {
        spec: { ...v1Spec, fees: V2_FEES, express: 'always' },
        mode_id: v1.mode_id,
        release: true,
      })) as unknown as Released;
      assert.equal(v2.version, 2);
      assert.notEqual(v2.mode_config_hash, v1.mode_config_hash);
      const stored = (await stack().db('mode_versions').where({ mode_id: v1.mode_id }).orderBy('version').select('config_hash')) as {
        config_hash: string;
      }[];
      assert.deepEqual(
        stored.map((r) => r.config_hash),
        [v1.mode_config_hash, v2.mode_config_hash],
      );

      // Another organisation: v1's panel and v1's prices, in both Forms.
      assert.deepEqual(await called(other, v1), { hashA: v1.mode_config_hash, versionA: 1, seatsB: 3, versionB: 1 });
      assertListing(await listed(other, v1), expectedListing(V1_FEES, 'auto'));
      // The owner's organisation: the latest release.
      assert.deepEqual(await called(owner, v1), { hashA: v2.mode_config_hash, versionA: 2, seatsB: 1, versionB: 2 });
      assertListing(await listed(owner, v1), expectedListing(V2_FEES, 'always'));

      // Certified at v1 only: v2 cannot be listed, and the marketplace keeps serving v1.
      const refused = refusal(await client.callTool({ name: 'list_mode', arguments: { mode_id: v1.mode_id } }));
      assert.deepEqual([refused.code, refused.status], ['published_version_uncertified', 409]);
      assert.equal((await called(other, v1)).hashA, v1.mode_config_hash);

      // Certified at v2, then listed: every organisation now calls v2.
      await certifiedAt(owner, v1, 2);
      assert.deepEqual((await tool(client, 'list_mode', { mode_id: v1.mode_id })).listing, { state: 'listed', version: 2 });
      assert.deepEqual(await called(other, v1), { hashA: v2.mode_config_hash, versionA: 2, seatsB: 1, versionB: 2 });
      assertListing(await listed(other, v1), expectedListing(V2_FEES, 'always'));
    } finally {
      await client.close();
    }
  });
});
