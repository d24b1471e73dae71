import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getBalance } from '../../../db/repositories/ledger';
import { loadConfig } from '../../../infra/config';
import { pythonOutput } from './python-script';
import { ensureVenv } from '../../../stack/python-venv';
import { toolEnv } from '../../../stack/tool-env';
import { stack } from '../../harness/stack';
import { assertEachBilledOnce, startProductWorkers } from '../deliberation/helpers';
import { EXPRESS, newOrg, startApi, type Api } from './helpers';

/**
 * Issue 40 item 1 through the official Python client, pinned from PyPI and installed by the project's own script
 * (stack/python-venv.ts, once per user): a background response created, polled to `completed`, its events streamed
 * from after the first (issue 40 item 2), cancelled once ended (unchanged) and deleted, as a Python user would; billed
 * once.
 */
const VERSION = '3.57.0';

/** Reads its inputs from the environment and prints one JSON line per step. */
const SCRIPT = `
import json, os, time
from openai import OpenAI, NotFoundError
client = OpenAI(base_url=os.environ["BASE_URL"], api_key=os.environ["API_KEY"], max_retries=0)
r = client.responses.create(model=os.environ["MODEL"], input=os.environ["INPUT"], background=True, metadata={"via": "python"})
print(json.dumps({"step": "created", "id": r.id, "status": r.status}))
while r.status in ("queued", "in_progress"):
    time.sleep(0.2)
    r = client.responses.retrieve(r.id)
print(json.dumps({"step": "done", "status": r.status, "output_text": r.output_text, "metadata": r.metadata, "usage": r.usage.to_dict(), "svc": r.to_dict()["svc"]}))
events = list(client.responses.retrieve(r.id, stream=True, starting_after=0))
print(json.dumps({"step": "stream", "seq": [e.sequence_number for e in events], "types": [e.type for e in events],
    "steps": [(e.model_extra or {}).get("quorum", {}).get("step") for e in events if e.type == "response.in_progress"],
    "text": next(e.text for e in events if e.type == "response.output_text.done")}))
c = client.responses.cancel(r.id)
print(json.dumps({"step": "cancel", "status": c.status}))
client.responses.delete(r.id)
try:
    client.responses.retrieve(r.id)
    print(json.dumps({"step": "after-delete", "status": 200}))
except NotFoundError as e:
    print(json.dumps({"step": "after-delete", "status": e.status_code, "code": e.code}))
`;

describe('responses through the official openai Python client', function () {
  this.timeout(10 * 60_000);
  let python: string;
  let workers: { stop(): Promise<void> };
  let api: Api;

  before(async () => {
    ({ python } = ensureVenv({ name: `openai-python-${VERSION}`, packages: [`openai==${VERSION}`] }, toolEnv(loadConfig(), process.env)));
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:1000' });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('create(background=True), retrieve until completed, stream its events, cancel (unchanged), delete; billed once', async () => {
    const org = await newOrg();
    const before = await getBalance(stack().db, org.orgId);
    const output = await pythonOutput(python, SCRIPT, {
      BASE_URL: `${api.url}/v1`,
      API_KEY: org.ownerKey,
      MODEL: EXPRESS.B,
      INPUT: `Why is the sky blue? ${randomUUID()}`,
    });
    const steps = Object.fromEntries(
      output
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { step: string } & Record<string, unknown>)
        .map((s) => [s.step, s]),
    );
    assert.equal(steps.created.status, 'queued');
    assert.match(String(steps.created.id), /^resp_/);
    const done = steps.done as unknown as {
      status: string;
      output_text: string;
      metadata: unknown;
      svc: { request_id: string; billed_usd: number };
    };
    assert.equal(done.status, 'completed');
    assert.ok(done.output_text.length > 0);
    assert.deepEqual(done.metadata, { via: 'python' });
    const stream = steps.stream as unknown as { seq: number[]; types: string[]; steps: (string | null)[]; text: string };
    assert.deepEqual(
      stream.seq,
      stream.seq.map((_, i) => i + 1),
      'every event after starting_after=0, in order',
    );
    assert.equal(stream.types[0], 'response.in_progress');
    assert.equal(stream.types[stream.types.length - 1], 'response.completed');
    // The express lane's steps: classified, then its one seat; the first in_progress is OpenAI's own.
    assert.deepEqual(stream.steps, [null, 'classified', 'seat_answered']);
    assert.equal(stream.text, done.output_text);
    assert.equal(steps.cancel.status, 'completed');
    assert.deepEqual([steps['after-delete'].status, steps['after-delete'].code], [404, 'response_not_found']);
    await assertEachBilledOnce(org.orgId, [done.svc.request_id]);
    const after = await getBalance(stack().db, org.orgId);
    assert.equal(before.balanceMicros - after.balanceMicros, BigInt(Math.round(done.svc.billed_usd * 1_000_000)));
  });
});
