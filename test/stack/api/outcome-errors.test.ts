import assert from 'node:assert/strict';
import { getBalance } from '../../../db/repositories/ledger';
import { upsertMode } from '../../../db/repositories/modes';
import { assertNothingBilled, chargeCount, startProductWorkers, withReceiptsRefused } from '../deliberation/helpers';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';
import { systemModeConfig } from './fixtures';
import { call, FORMS, newKey, newOrg, PANEL, startApi, USER, type Api, type Reply } from './helpers';

/** The spec status, type and code, and the request named in `svc.request_id`. */
function expectRunError(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.deepEqual(
    [reply.body.error?.type, reply.body.error?.code],
    [status === 402 ? 'invalid_request_error' : 'api_error', code],
    JSON.stringify(reply.body),
  );
  assert.match(String((reply.body.svc as { request_id?: unknown } | undefined)?.request_id), /^req_/, 'the error names the request');
}

for (const form of FORMS) {
  describe(`API errors from a deliberation that started, Form ${form}`, function () {
    this.timeout(60_000);
    let api: Api;
    let workers: { stop(): Promise<void> };
    before(async () => {
      workers = await startProductWorkers({});
      api = await startApi(form);
    });
    after(async () => {
      await api.close();
      await workers.stop();
    });

    it("insufficient_balance: 402 when the balance cannot cover the call's ceiling, before anything starts", async () => {
      const org = await newOrg(0);
      // The trial's $5 is all it holds; this key's ceiling is $50, so the reservation cannot be covered.
      const key = await newKey(org.orgId, { limits: { maxCostMicros: 50_000_000n } });
      const before = await getBalance(stack().db, org.orgId);
      expectRunError(
        await call(api, 'POST', '/v1/chat/completions', {
          key,
          body: { model: PANEL[form], messages: USER('Compare two sorting algorithms step by step.') },
        }),
        402,
        'insufficient_balance',
      );
      await assertNothingBilled(org.orgId, before);
      assert.equal(
        (await stack().db('requests').where({ org_id: org.orgId })).length,
        0,
        'refused before a request row or a workflow exists',
      );
    });

    it('mode_resolution_mismatch: 502 when the stored mode version does not hash to its recorded hash', async () => {
      const org = await newOrg();
      const mode = await upsertMode(stack().db, {
        id: `drift-${org.orgId.slice(4, 12).toLowerCase()}`,
        ticker: uniqueTicker('DRFT'),
        orgId: org.orgId,
        name: 'Drift',
        description: null,
        useWhen: 'x',
        published: true,
        config: systemModeConfig(),
      });
      await stack().db('mode_versions').where({ mode_id: mode.id, version: mode.version }).update({ config_hash: 'f00dfeedbeef' });
      const before = await getBalance(stack().db, org.orgId);
      const model = form === 'A' ? mode.id : mode.ticker;
      expectRunError(
        await call(api, 'POST', '/v1/chat/completions', { key: org.ownerKey, body: { model, messages: USER('What is 2+2?') } }),
        502,
        'mode_resolution_mismatch',
      );
      await assertNothingBilled(org.orgId, before);
    });

    it('cost_unreadable: 502 when the outcome cannot be recorded; the same Idempotency-Key then settles it without a second run', async () => {
      const org = await newOrg();
      const before = await getBalance(stack().db, org.orgId);
      const request = {
        key: org.ownerKey,
        body: { model: PANEL[form], messages: USER('What is 2+2?') },
        headers: { 'idempotency-key': 'unrecordable' },
      };
      expectRunError(
        await withReceiptsRefused(org.orgId, () => call(api, 'POST', '/v1/chat/completions', request)),
        502,
        'cost_unreadable',
      );
      await assertNothingBilled(org.orgId, before);
      const failed = await stack().db('requests').where({ org_id: org.orgId }).first('id');
      const retry = await call(api, 'POST', '/v1/chat/completions', request);
      assert.equal(retry.status, 200, JSON.stringify(retry.body));
      assert.equal(retry.body.svc?.request_id, failed.id, "the first run's answer");
      assert.equal((await stack().db('requests').where({ org_id: org.orgId })).length, 1, 'the engines did not run again');
      assert.equal(await chargeCount(org.orgId), 1, 'billed once');
    });
  });
}
