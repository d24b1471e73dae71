import { execFile } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ModeRecord } from '../../../domain/modes';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
import { stack } from '../../harness/stack';
import { OPENAI_TEST_KEY, openAiReply, startLoopback, startOpenAiLoopback, type Loopback } from '../../fixtures/providers';
import { customMode, deliberate, newOrg, startProductWorkers, systemMode } from './helpers';

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..', '..');
const NEEDS_SEARCH = 'What is the latest population of Reykjavik according to the 2026 census? Cite the source.';

/** The bodies of the seat calls the loopback received (a deliberation's seats run inside its workflow task, so their inputs are not in its history). */
function seatRequests(loopback: Loopback): string[] {
  return loopback.requests.map((r) => r.bodyText).filter((body) => !body.includes(JUDGE_TAG) && !body.includes(SYNTHESIS_TAG));
}

/** A panel whose every seat is on the recording loopback, so each seat's prompt can be read. */
async function openAiSeats(orgId: string): Promise<ModeRecord> {
  const { tiers } = (await systemMode('quorum-panel')).config;
  return customMode(orgId, 'quorum-panel', {
    tiers: { ...tiers, plus: { seats: ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'openai/gpt-5'] } },
  });
}

describe('grounding', function () {
  this.timeout(120_000);
  let openai: Loopback;
  const openAiEnv = (): NodeJS.ProcessEnv => ({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl });
  before(async () => {
    openai = await startOpenAiLoopback(() => openAiReply({ text: 'An answer from the loopback engine.' }));
  });
  after(() => openai.close());
  beforeEach(() => {
    openai.requests.length = 0;
  });

  describe('on operator-loaded documents (Postgres full-text search)', () => {
    let workers: { stop(): Promise<void> };
    before(async () => {
      workers = await startProductWorkers(openAiEnv());
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
      const mode = await openAiSeats(org.orgId);
      const grounded = await deliberate({ org, mode, content: NEEDS_SEARCH, idempotencyKey: 'grounded' });
      assert.equal(grounded.outcome.classification.grounding, true);
      assert.deepEqual(grounded.outcome.staff.grounding, { fired: true, modelUsed: 'postgres_fts' });
      const inputs = seatRequests(openai);
      assert.ok(inputs.length >= 3, `seat calls: ${inputs.length}`);
      for (const input of inputs) assert.match(input, /139,875/);

      openai.requests.length = 0;
      const plain = await deliberate({ org, mode, content: 'Write a short poem about autumn leaves.', idempotencyKey: 'plain' });
      assert.deepEqual(plain.outcome.staff.grounding, { fired: false, modelUsed: null });
      // A short creative prompt may take the express lane: one seat.
      assert.ok(seatRequests(openai).length >= 1);
      for (const input of seatRequests(openai)) assert.doesNotMatch(input, /Search results/);
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
      workers = await startProductWorkers({ ...openAiEnv(), QUORUM_SEARXNG_URL: searx.baseUrl });
    });
    after(async () => {
      await workers.stop();
      await searx.close();
    });

    it('uses QUORUM_SEARXNG_URL when set and reports it as the source', async () => {
      const org = await newOrg();
      const { outcome } = await deliberate({ org, mode: await openAiSeats(org.orgId), content: NEEDS_SEARCH, idempotencyKey: 'searx' });
      assert.deepEqual(outcome.staff.grounding, { fired: true, modelUsed: 'searxng' });
      assert.equal(searx.requests.length, 1);
      assert.deepEqual(searx.rejected, []);
      assert.ok(seatRequests(openai).length >= 3);
      for (const input of seatRequests(openai)) assert.match(input, /Statistics Iceland/);
    });
  });
});
