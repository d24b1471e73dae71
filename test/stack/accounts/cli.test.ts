import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { authenticate } from '../../../db/repositories/api-keys';
import { randomBase62 } from '../../../domain/api-keys';
import { QuorumError } from '../../../domain/errors';
import { createSecretBox, parseMasterKey } from '../../../infra/secret-box';
import { quorumCli, type CliRun } from '../../harness/cli';
import { stack } from '../../harness/stack';
import { dumpDatabase, encodingsOf } from './fixtures/helpers';

describe('accounts: the quorum operator CLI', () => {
  let dataDir: string;
  const secretKey = randomBytes(32).toString('hex');

  before(() => {
    // Its own data folder: no developer's running stack or local dev key leaks into the test.
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-cli-'));
    process.env.QUORUM_SECRET_KEY ??= secretKey;
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  function quorum(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
    return quorumCli(args, dataDir, { QUORUM_SECRET_KEY: process.env.QUORUM_SECRET_KEY, ...env });
  }

  /** `--json` prints exactly one JSON object and nothing else on stdout. */
  async function json(args: string[], env?: Record<string, string | undefined>): Promise<Record<string, unknown>> {
    const run = await quorum([...args, '--json'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim().split('\n').length, 1, run.stdout);
    const parsed: unknown = JSON.parse(run.stdout);
    assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed));
    return parsed as Record<string, unknown>;
  }

  it('org create, key create/revoke, org suspend/resume, balance add/show', async function () {
    this.timeout(90_000);
    const { db, env } = stack();
    // With Temporal reachable the trial timer starts at once.
    const org = await json(['org', 'create', '--name', 'CLI Co', '--credit', '12.50'], {
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: stack().namespace,
    });
    assert.deepEqual(Object.keys(org).sort(), ['api_key', 'balance_usd', 'org_id']);
    assert.equal(org.balance_usd, 17.5);
    const orgId = String(org.org_id);
    const owner = await authenticate(db, String(org.api_key));
    assert.equal(owner.isOwner, true);
    const timer = env.client.workflow.getHandle(`trial/${orgId}`);
    assert.equal((await timer.describe()).status.name, 'RUNNING');
    await timer.terminate('test over');

    const key = await json(['key', 'create', '--org', orgId, '--test', '--scopes', 'completions,estimate', '--modes', 'quorum-fast']);
    assert.deepEqual(key, {
      key_id: key.key_id,
      api_key: key.api_key,
      label: null,
      expires_at: null,
      monthly_budget_usd: null,
      requests_per_minute: null,
    });
    const ctx = await authenticate(db, String(key.api_key));
    assert.deepEqual(
      [ctx.keyKind, ctx.scopes, ctx.allowedModes, ctx.isOwner],
      ['test', ['completions', 'estimate'], ['quorum-fast'], false],
    );
    // A live key with every limit the API gives one, read back from Postgres.
    const limited = await json([
      ...['key', 'create', '--org', orgId, '--label', 'nightly batch', '--expires-at', '2099-01-31T00:00:00Z'],
      ...['--budget-usd', '25.000001', '--rpm', '7'],
    ]);
    const row = (await db('api_keys')
      .where({ id: limited.key_id })
      .first('label', 'expires_at', 'monthly_budget_micros', 'requests_per_minute')) as {
      label: string;
      expires_at: Date;
      monthly_budget_micros: bigint;
      requests_per_minute: number;
    };
    assert.deepEqual(
      [row.label, row.expires_at.toISOString(), row.monthly_budget_micros, row.requests_per_minute],
      ['nightly batch', '2099-01-31T00:00:00.000Z', 25_000_001n, 7],
    );
    assert.equal((await authenticate(db, String(limited.api_key))).monthlyBudgetMicros, 25_000_001n);
    const said = await quorum(['key', 'create', '--org', orgId, '--budget-usd', '3', '--rpm', '2']);
    assert.equal(said.code, 0, said.stderr);
    assert.match(said.stdout, /\(monthly budget \$3(\.0+)?, 2 requests a minute\)/);
    assert.deepEqual(await json(['key', 'revoke', '--key', String(key.key_id)]), { key_id: key.key_id, revoked: true });
    await assert.rejects(authenticate(db, String(key.api_key)), (e: unknown) => e instanceof QuorumError && e.code === 'revoked_api_key');

    assert.deepEqual(await json(['org', 'suspend', '--org', orgId]), { org_id: orgId, status: 'suspended' });
    await assert.rejects(authenticate(db, String(org.api_key)), (e: unknown) => e instanceof QuorumError && e.code === 'org_suspended');
    assert.deepEqual(await json(['org', 'resume', '--org', orgId]), { org_id: orgId, status: 'active' });

    assert.deepEqual(await json(['balance', 'add', '--org', orgId, '--usd', '0.000001']), { org_id: orgId, balance_usd: 17.500001 });
    const shown = await json(['balance', 'show', '--org', orgId, '--limit', '2']);
    assert.equal(shown.balance_usd, 17.500001);
    assert.equal(shown.available_usd, 17.500001);
    assert.equal(shown.reserved_usd, 0);
    const entries = shown.entries as { kind: string; amount_usd: number }[];
    assert.deepEqual(
      entries.map((e) => [e.kind, e.amount_usd]),
      [
        ['top_up', 0.000001],
        ['top_up', 12.5],
      ],
    );

    const human = await quorum(['balance', 'show', '--org', orgId]);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /balance \$17\.500001/);
    assert.match(human.stdout, /trial_credit/);
  });

  it('without Temporal, org create still succeeds and defers the trial timer', async function () {
    this.timeout(60_000);
    const run = await quorum(['org', 'create', '--name', 'Offline Co', '--json'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(run.code, 0, run.stderr);
    const org = JSON.parse(run.stdout) as { org_id: string; balance_usd: number };
    assert.equal(org.balance_usd, 5);
    assert.match(run.stderr, /trial timer deferred/);
    const row = await stack().db('organisations').where({ id: org.org_id }).first('trial_timer_started_at');
    assert.equal(row.trial_timer_started_at, null);
  });

  it('without DATABASE_URL or a running stack, uses the local embedded Postgres for the command only', async function () {
    this.timeout(120_000);
    const local = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-cli-pg-'));
    // Postgres runs as the `postgres` user when we are root: it must be able to enter the folder.
    fs.chmodSync(local, 0o755);
    try {
      const env = { DATABASE_URL: undefined, QUORUM_DATA_DIR: local };
      const org = await json(['org', 'create', '--name', 'Local Co'], env);
      assert.deepEqual(await json(['balance', 'add', '--org', String(org.org_id), '--usd', '1'], env), {
        org_id: org.org_id,
        balance_usd: 6,
      });
      assert.ok(fs.existsSync(path.join(local, 'pg', 'PG_VERSION')));
    } finally {
      fs.rmSync(local, { recursive: true, force: true });
    }
  });

  it('byok set stores keys encrypted and never prints them', async function () {
    this.timeout(60_000);
    const { db } = stack();
    const org = await json(['org', 'create', '--name', 'CLI BYOK Co']);
    const orgId = String(org.org_id);
    const providerKey = `sk-ant-${randomBase62(40)}`;
    const keyFile = path.join(dataDir, 'anthropic.key');
    fs.writeFileSync(keyFile, providerKey + '\n');
    const runs = [await quorum(['byok', 'set', '--org', orgId, '--family', 'anthropic', '--key-file', keyFile, '--json'])];
    assert.deepEqual(JSON.parse(runs[0].stdout), { org_id: orgId, family: 'anthropic', configured: true });
    runs.push(await quorum(['byok', 'set', '--org', orgId, '--family', 'anthropic', '--key-file', keyFile]));
    const arn = 'arn:aws:iam::123456789012:role/Seats';
    const bedrock = await json(['byok', 'set', '--org', orgId, '--family', 'bedrock', '--role-arn', arn, '--external-id', 'ext-42']);
    assert.deepEqual(bedrock, { org_id: orgId, family: 'bedrock', role_arn: arn });

    for (const run of runs)
      for (const text of [run.stdout, run.stderr]) assert.ok(!text.includes(providerKey), 'provider key printed by the CLI');
    const dump = await dumpDatabase(db);
    for (const form of encodingsOf(providerKey)) assert.ok(!dump.includes(form), 'provider key in the database');
    // Opened with the key the CLI was given, not with a box of this process's: what the CLI sealed is what is checked.
    const sealed = (await db('provider_credentials').where({ org_id: orgId, family: 'anthropic' }).first('ciphertext', 'iv', 'tag')) as {
      ciphertext: Buffer;
      iv: Buffer;
      tag: Buffer;
    };
    const cliBox = createSecretBox(parseMasterKey(String(process.env.QUORUM_SECRET_KEY)));
    assert.equal(cliBox.open(sealed, `provider_credentials:${orgId}:anthropic`), providerKey);

    // Development without QUORUM_SECRET_KEY: a local key is made once under the data folder, with a warning.
    const dev = await quorum(['byok', 'set', '--org', orgId, '--family', 'openai', '--key-file', keyFile, '--json'], {
      QUORUM_SECRET_KEY: undefined,
    });
    assert.equal(dev.code, 0, dev.stderr);
    assert.match(dev.stderr, /QUORUM_SECRET_KEY is not set/);
    assert.equal(fs.statSync(path.join(dataDir, 'secret.key')).mode & 0o777, 0o600);
    const prod = await quorum(['byok', 'set', '--org', orgId, '--family', 'openai', '--key-file', keyFile], {
      QUORUM_SECRET_KEY: undefined,
      QUORUM_ENV: 'production',
    });
    assert.equal(prod.code, 1);
    assert.match(prod.stderr, /QUORUM_SECRET_KEY is required when QUORUM_ENV=production/);
  });

  it('bad arguments give a clear message on stderr and a non-zero exit', async function () {
    // About 25 CLI processes, each compiling the CLI through tsx: 53 s on two busy cores beside another shard.
    this.timeout(180_000);
    const cases: [string[], RegExp][] = [
      [[], /usage: quorum <command>/],
      [['org', 'launch'], /unknown command: org launch/],
      [['org', 'create'], /--name is required/],
      [['org', 'create', '--name', 'X', '--credit', 'ten'], /--credit must be a USD amount/],
      [['org', 'create', '--name', 'X', '--colour', 'red'], /Unknown option '--colour'/],
      [['key', 'create', '--org', 'org_x', '--scopes', 'completions,admin'], /--scopes\.1 must be among completions/],
      [['key', 'create', '--org', 'org_x', '--expires-at', 'tomorrow'], /--expires-at must be an ISO 8601 instant/],
      [['key', 'create', '--org', 'org_x', '--expires-at', '2099-01-31T00:00:00.500Z'], /--expires-at must name a whole second/],
      [['key', 'create', '--org', 'org_x', '--budget-usd', 'ten'], /--budget-usd must be a USD amount/],
      [['balance', 'add', '--org', 'org_x', '--usd=-3'], /--usd must be a positive amount/],
      [['balance', 'add', '--org', 'org_x', '--usd', '-3'], /Option '--usd' argument is ambiguous/],
      [['balance', 'show', '--org', 'org_x', '--limit', 'lots'], /--limit/],
      [
        ['byok', 'set', '--org', 'org_x', '--family', 'mistral', '--key-file', 'k'],
        /--family must be openai, anthropic, google or bedrock/,
      ],
      [['byok', 'set', '--org', 'org_x', '--family', 'bedrock', '--key-file', 'k'], /--role-arn is required/],
    ];
    const runs = await Promise.all(cases.map(([args]) => quorum([...args, '--json'])));
    runs.forEach((run, i) => {
      assert.equal(run.code, 2, `${cases[i][0].join(' ')}: exit ${run.code}`);
      assert.match(run.stderr, cases[i][1]);
      assert.equal(run.stdout, '');
    });
    // Well-formed but impossible: exit 1 with the error code.
    const missing = await quorum(['balance', 'add', '--org', 'org_missing', '--usd', '1', '--json']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not_found: no organisation org_missing/);
    assert.equal((JSON.parse(missing.stdout) as { error: { code: string } }).error.code, 'not_found');
    // The key's fields judged by the API's own schema and operation, before anything is written: exit 1, the API's words.
    const judged: [string[], RegExp][] = [
      [['--expires-at', '2020-01-01T00:00:00Z'], /invalid_request: `expires_at` must be in the future/],
      [['--budget-usd', '1.0000001'], /invalid_request: `monthly_budget_usd`: at most 6 decimals/],
      [['--budget-usd', '0'], /invalid_request: `monthly_budget_usd`: /],
      [['--budget-usd', '1000001'], /invalid_request: `monthly_budget_usd`: /],
      [['--rpm', '0'], /invalid_request: `requests_per_minute`: /],
      [['--rpm', '1.5'], /invalid_request: `requests_per_minute`: /],
      [['--label', ' '], /invalid_request: `label`: /],
    ];
    const judgedRuns = await Promise.all(judged.map(([args]) => quorum(['key', 'create', '--org', 'org_x', ...args, '--json'])));
    judgedRuns.forEach((run, i) => {
      assert.equal(run.code, 1, `${judged[i][0].join(' ')}: exit ${run.code} ${run.stderr}`);
      assert.match(run.stderr, judged[i][1]);
    });
    const noFile = await quorum(['byok', 'set', '--org', 'org_x', '--family', 'openai', '--key-file', path.join(dataDir, 'nope')]);
    assert.equal(noFile.code, 2);
    assert.match(noFile.stderr, /--key-file cannot be read/);
  });
});
