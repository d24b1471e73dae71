import { ESLint } from 'eslint';
import assert from 'node:assert/strict';
import path from 'node:path';

/** eslint.config.mjs's rule that only the entry points and infra/config.ts read `process.env`, on code never written to disk. */
const eslint = new ESLint({ cwd: path.join(__dirname, '..', '..', '..') });

async function envReadErrors(filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText('export const level = process.env.QUORUM_LOG_LEVEL;\n', { filePath });
  assert.ok(result, 'ESLint returned no result');
  assert.ok(
    result.messages.every((m) => !m.fatal),
    `${filePath} did not parse: ${JSON.stringify(result.messages)}`,
  );
  return result.messages.filter((m) => m.ruleId === 'no-restricted-properties').map((m) => m.message);
}

describe('lint: only the entry points read the environment', function () {
  this.timeout(30_000);

  for (const file of [
    'engines/index.ts',
    'activities/deliberation.ts',
    'api/app.ts',
    'infra/log.ts',
    'operations/models.ts',
    'cli/commands.ts',
  ])
    it(`refuses process.env in ${file}`, async () => {
      const errors = await envReadErrors(file);
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.match(errors[0] ?? '', /EnvSchema/);
    });

  for (const file of ['api/main.ts', 'worker/main.ts', 'cli/main.ts', 'infra/config.ts', 'test/harness/stack.ts'])
    it(`accepts it in ${file}`, async () => {
      assert.deepEqual(await envReadErrors(file), []);
    });
});

describe('lint: below the entry points no one takes the raw environment', function () {
  this.timeout(30_000);

  async function rawEnvironmentErrors(filePath: string): Promise<string[]> {
    const code = 'export function read(env: NodeJS.ProcessEnv): string | undefined {\n  return env.QUORUM_ENV;\n}\n';
    const [result] = await eslint.lintText(code, { filePath });
    assert.ok(result, 'ESLint returned no result');
    assert.ok(
      result.messages.every((m) => !m.fatal),
      `${filePath} did not parse: ${JSON.stringify(result.messages)}`,
    );
    return result.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-types').map((m) => m.message);
  }

  for (const file of [
    'engines/credentials.ts',
    'operations/ledger.ts',
    'api/app.ts',
    'cli/command.ts',
    'activities/deps.ts',
    'infra/log.ts',
  ])
    it(`refuses NodeJS.ProcessEnv in ${file}`, async () => {
      const errors = await rawEnvironmentErrors(file);
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.match(errors[0] ?? '', /Config/);
    });

  for (const file of ['api/main.ts', 'worker/run.ts', 'cli/main.ts', 'infra/config.ts', 'stack/supervisor.ts', 'test/harness/settings.ts'])
    it(`accepts it in ${file}`, async () => {
      assert.deepEqual(await rawEnvironmentErrors(file), []);
    });
});
