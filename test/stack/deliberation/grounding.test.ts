import { execFile } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { workflowIds } from '../../../domain/workflow-ids';
import { stack } from '../../harness/stack';
import { startLoopback, type Loopback } from '../../fixtures/providers';
import { deliberate, newOrg, startProductWorkers, systemMode } from './helpers';

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..', '..');
const NEEDS_SEARCH = 'What is the latest population of Reykjavik according to the 2026 census? Cite the source.';

/** The messages each seat was sent, read back from the workflow's history. */
async function seatInputs(orgId: string, key: string): Promise<string[]> {
  const history = await stack().env.client.workflow.getHandle(workflowIds.deliberation(orgId, key)).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'seat')
    .map((e) => Buffer.from(e.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data ?? new Uint8Array()).toString('utf8'));
}

describe('grounding', function () {
  this.timeout(120_000);

  describe('on operator-loaded documents (Postgres full-text search)', () => {
    let workers: { stop(): Promise<void> };
    before(async () => {
      workers = await startProductWorkers({});
    });
    after(() => workers.stop());

    it('loads documents with `quorum docs add`, fires only when the classifier gates it, and gives seats the results', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-docs-'));
      const file = path.join(dir, 'reykjavik-census.txt');
      fs.writeFileSync(file, 'The 2026 census counted the population of Reykjavik at 139,875 residents, up from 135,688.');
      const { stdout } = await run(process.execPath, [path.join(root, 'bin/quorum.js'), 'docs', 'add', file, '--json'], {
        env: { ...process.env, DATABASE_URL: stack().dbUrl },
      });
      assert.deepEqual(JSON.parse(stdout).added, 1);

      const org = await newOrg();
      const mode = await systemMode('quorum-panel');
      const grounded = await deliberate({ org, mode, content: NEEDS_SEARCH, idempotencyKey: 'grounded' });
      assert.equal(grounded.outcome.classification.grounding, true);
      assert.deepEqual(grounded.outcome.staff.grounding, { fired: true, modelUsed: 'postgres_fts' });
      const inputs = await seatInputs(org.orgId, 'grounded');
      assert.ok(inputs.length >= 3);
      for (const input of inputs) assert.match(input, /139,875/);

      const plain = await deliberate({ org, mode, content: 'Write a short poem about autumn leaves.', idempotencyKey: 'plain' });
      assert.deepEqual(plain.outcome.staff.grounding, { fired: false, modelUsed: null });
      for (const input of await seatInputs(org.orgId, 'plain')) assert.doesNotMatch(input, /Search results/);
    });
  });

  describe('on a SearXNG endpoint', () => {
    let searx: Loopback;
    let workers: { stop(): Promise<void> };
    before(async () => {
      searx = await startLoopback({
        check: (req) =>
          req.path === '/search' && req.query.get('format') === 'json' && req.query.get('q')
            ? undefined
            : { reason: `bad search ${req.path}`, reply: { status: 400, text: 'bad' } },
        script: {
          json: {
            results: [{ title: 'Statistics Iceland', content: 'Reykjavik population 139,875 (2026).', url: 'https://example.org/census' }],
          },
        },
      });
      workers = await startProductWorkers({ QUORUM_SEARXNG_URL: searx.baseUrl });
    });
    after(async () => {
      await workers.stop();
      await searx.close();
    });

    it('uses QUORUM_SEARXNG_URL when set and reports it as the source', async () => {
      const org = await newOrg();
      const { outcome } = await deliberate({ org, mode: await systemMode('quorum-panel'), content: NEEDS_SEARCH, idempotencyKey: 'searx' });
      assert.deepEqual(outcome.staff.grounding, { fired: true, modelUsed: 'searxng' });
      assert.equal(searx.requests.length, 1);
      assert.deepEqual(searx.rejected, []);
      for (const input of await seatInputs(org.orgId, 'searx')) assert.match(input, /Statistics Iceland/);
    });
  });
});
