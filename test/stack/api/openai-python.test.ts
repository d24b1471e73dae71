import assert from 'node:assert/strict';
import { loadConfig } from '../../../infra/config';
import { pythonOutput } from './python-script';
import { ensureVenv } from '../../../stack/python-venv';
import { toolEnv } from '../../../stack/tool-env';
import { startProductWorkers } from '../deliberation/helpers';
import { EXPRESS, FORMS, newKey, newOrg, startApi, type Api } from './helpers';

/**
 * Issue 40 item 4 through OpenAI's official Python client, pinned and installed from PyPI by the project's own script
 * (stack/python-venv.ts, once per user): a `response_format` JSON schema comes back as JSON valid against it (checked
 * here by hand, field by field), and a refused parameter raises `BadRequestError` naming it.
 */
const VERSION = '3.57.0';

const SCRIPT = String.raw`
import json, os, sys
import openai
client = openai.OpenAI(base_url=os.environ["BASE_URL"], api_key=os.environ["KEY"], max_retries=0, timeout=120)
model = os.environ["MODEL"]
messages = [{"role": "user", "content": "Name a European capital and its population. " + os.environ["MARKER"]}]
schema = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 80}, "population": {"type": "integer", "minimum": 0}},
    "required": ["city", "population"],
    "additionalProperties": False,
}
res = client.chat.completions.create(
    model=model,
    messages=messages,
    response_format={"type": "json_schema", "json_schema": {"name": "capital", "strict": True, "schema": schema}},
)
out = {"content": res.choices[0].message.content, "finish": res.choices[0].finish_reason}
try:
    client.chat.completions.create(model=model, messages=messages, n=2)
    out["refused"] = None
except openai.BadRequestError as e:
    out["refused"] = {"status": e.status_code, "code": e.code, "param": e.param}
print(json.dumps(out))
`;

describe(`the official Python client (openai==${VERSION}): response_format and a refused parameter (issue 40)`, function () {
  this.timeout(10 * 60_000);
  let workers: { stop(): Promise<void> };
  let python: string;
  before(async () => {
    ({ python } = ensureVenv({ name: `openai-python-${VERSION}`, packages: [`openai==${VERSION}`] }, toolEnv(loadConfig(), process.env)));
    workers = await startProductWorkers({});
  });
  after(() => workers?.stop());

  for (const form of FORMS) {
    it(`Form ${form}`, async () => {
      const api: Api = await startApi(form);
      try {
        const org = await newOrg(5);
        const key = await newKey(org.orgId, { limits: { requestsPerMinute: 1_000 } });
        const out = JSON.parse(
          await pythonOutput(python, SCRIPT, { BASE_URL: `${api.url}/v1`, KEY: key, MODEL: EXPRESS[form], MARKER: `${form}-${org.orgId}` }),
        ) as { content: string; finish: string; refused: { status: number; code: string; param: string } | null };
        const answer = JSON.parse(out.content) as Record<string, unknown>;
        assert.deepEqual(Object.keys(answer).sort(), ['city', 'population']);
        assert.ok(typeof answer.city === 'string' && answer.city.length <= 80, out.content);
        assert.ok(Number.isInteger(answer.population) && (answer.population as number) >= 0, out.content);
        assert.equal(out.finish, 'stop');
        assert.deepEqual(out.refused, { status: 400, code: 'unsupported_parameter', param: 'n' });
      } finally {
        await api.close();
      }
    });
  }
});
