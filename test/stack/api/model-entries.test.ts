import assert from 'node:assert/strict';
import { z } from 'zod';
import OpenAI from 'openai';
import { upsertMode } from '../../../db/repositories/modes';
import { SYSTEM_MODES } from '../../../domain/modes';
import { loadConfig } from '../../../infra/config';
import { pythonOutput } from './python-script';
import { ensureVenv } from '../../../stack/python-venv';
import { toolEnv } from '../../../stack/tool-env';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';
import { call, EXPRESS, FORMS, newKey, newOrg, PANEL, startApi, type Api, type TestOrg } from './helpers';

/**
 * Issue 53 item 5: every `/v1/models` entry, and `/v1/models/{id}`, in both Forms, is OpenAI's `Model` whole, so a
 * strictly typed client parses it: async-openai's `Model { id: String, object: String, created: u32, owned_by: String }`
 * (serde: every field required, unknown ones ignored), and openai-python's `Model` validated strictly by pydantic.
 * `created` is the mode's first save, read here from Postgres, and a new version of the panel does not move it;
 * `owned_by` is spec 01's constant neutral owner label, the same in both Forms.
 */

const VERSION = '3.57.0';

/** async-openai's `Model` as serde reads it: the four fields present and typed, `created` an unsigned 32-bit integer. */
const AsyncOpenAiModel = z.object({
  id: z.string(),
  object: z.string(),
  created: z
    .number()
    .int()
    .min(0)
    .max(2 ** 32 - 1),
  owned_by: z.string(),
});

const SCRIPT = String.raw`
import json, os
import openai
from openai.types import Model
client = openai.OpenAI(base_url=os.environ["BASE_URL"], api_key=os.environ["KEY"], max_retries=0, timeout=60)
raw = client.models.with_raw_response.list().http_response.json()["data"]
checked = [Model.model_validate(entry, strict=True).model_dump(include={"id", "object", "created", "owned_by"}) for entry in raw]
one = client.models.with_raw_response.retrieve(os.environ["MODEL"]).http_response.json()
checked.append(Model.model_validate(one, strict=True).model_dump(include={"id", "object", "created", "owned_by"}))
listed = [{"id": m.id, "created": m.created, "owned_by": m.owned_by} for m in client.models.list()]
print(json.dumps({"checked": checked, "listed": listed}))
`;

/** When Postgres says the mode of this listing id was first saved, in Unix seconds. */
async function createdInDb(form: 'A' | 'B', id: string): Promise<number> {
  const row = (await stack()
    .db('modes')
    .where(form === 'A' ? 'id' : 'ticker', id)
    .first('created_at')) as { created_at: Date } | undefined;
  assert.ok(row, `no mode ${id}`);
  return Math.floor(row.created_at.getTime() / 1000);
}

type Entry = Record<string, unknown>;

for (const form of FORMS) {
  describe(`model entries are OpenAI's Model whole, Form ${form} (issue 53 item 5)`, function () {
    this.timeout(10 * 60_000);
    let api: Api;
    let org: TestOrg;
    let key: string;
    /** The organisation's own mode: its listing id in this Form. */
    let own: string;
    let ownSpec: Parameters<typeof upsertMode>[1];

    before(async () => {
      api = await startApi(form);
      org = await newOrg();
      key = await newKey(org.orgId);
      ownSpec = { ...SYSTEM_MODES[0], id: `entries-${org.orgId}`, ticker: uniqueTicker('ENTR'), orgId: org.orgId, published: true };
      const saved = await upsertMode(stack().db, ownSpec);
      own = form === 'A' ? saved.id : saved.ticker;
    });
    after(() => api.close());

    const list = async (): Promise<Entry[]> => {
      const reply = await call(api, 'GET', '/v1/models', { key });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      return reply.body.data as Entry[];
    };

    it('every entry, listed and retrieved, parses as async-openai’s Model; created is the mode’s first save; owned_by the neutral label', async () => {
      const data = await list();
      const ids = data.map((m) => String(m.id));
      for (const id of [PANEL[form], EXPRESS[form], own]) assert.ok(ids.includes(id), `${id} listed`);
      const now = Math.floor(Date.now() / 1000);
      for (const entry of data) {
        const head = AsyncOpenAiModel.parse(entry);
        assert.equal(head.object, 'model');
        assert.equal(head.owned_by, 'quorum');
        assert.equal(head.created, await createdInDb(form, head.id), `${head.id}: created is modes.created_at`);
        assert.ok(head.created <= now);
        const one = await call(api, 'GET', `/v1/models/${encodeURIComponent(head.id)}`, { key });
        assert.equal(one.status, 200, JSON.stringify(one.body));
        assert.deepEqual(AsyncOpenAiModel.parse(one.body), head, `${head.id}: retrieve says what the list says`);
      }
      // openai-node's typed list reads the same four fields (compared by id: another suite may list a mode meanwhile).
      const sdk = new OpenAI({ baseURL: `${api.url}/v1`, apiKey: key, maxRetries: 0 });
      const heads = new Map(data.map((m) => [String(m.id), AsyncOpenAiModel.parse(m)]));
      const seen: string[] = [];
      for await (const m of sdk.models.list()) {
        const head = { id: m.id, object: m.object, created: m.created, owned_by: m.owned_by };
        if (heads.has(m.id)) assert.deepEqual(head, heads.get(m.id));
        else assert.deepEqual(AsyncOpenAiModel.parse(head), head);
        seen.push(m.id);
      }
      for (const id of [PANEL[form], EXPRESS[form], own]) assert.ok(seen.includes(id), `${id} read by openai-node`);
    });

    it('a new version of the panel keeps the mode’s created', async () => {
      const before = AsyncOpenAiModel.parse((await list()).find((m) => m.id === own));
      await new Promise((r) => setTimeout(r, 1_100));
      const v2 = await upsertMode(stack().db, {
        ...ownSpec,
        config: {
          ...ownSpec.config,
          tiers: {
            ...ownSpec.config.tiers,
            plus: { seats: ['openai/gpt-4.1', 'google/gemini-2.5-flash', 'bedrock/meta.llama3-3-70b-instruct'] },
          },
        },
      });
      assert.equal(v2.version, 2);
      const after = AsyncOpenAiModel.parse((await list()).find((m) => m.id === own));
      assert.deepEqual(after, before);
    });

    it('openai-python validates every entry strictly as its Model', async () => {
      const { python } = ensureVenv(
        { name: `openai-python-${VERSION}`, packages: [`openai==${VERSION}`] },
        toolEnv(loadConfig(), process.env),
      );
      const out = JSON.parse(await pythonOutput(python, SCRIPT, { BASE_URL: `${api.url}/v1`, KEY: key, MODEL: PANEL[form] })) as {
        checked: Entry[];
        listed: Entry[];
      };
      // Each entry pydantic accepted is the entry the API lists (by id: another suite may list a mode meanwhile).
      const heads = new Map((await list()).map((m) => [String(m.id), AsyncOpenAiModel.parse(m)]));
      const ids = out.checked.map((m) => String(m.id));
      for (const id of [PANEL[form], EXPRESS[form], own]) assert.ok(ids.includes(id), `${id} validated`);
      assert.equal(out.checked.at(-1)?.id, PANEL[form], 'the retrieved entry validated too');
      for (const m of out.checked) if (heads.has(String(m.id))) assert.deepEqual(m, heads.get(String(m.id)));
      for (const m of out.listed) {
        const head = heads.get(String(m.id));
        if (head) assert.deepEqual(m, { id: head.id, created: head.created, owned_by: head.owned_by });
      }
    });
  });
}
