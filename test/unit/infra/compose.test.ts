import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { loadConfig, SHUTDOWN_MARGIN_MS } from '../../../infra/config';
import { TEMPORAL_DYNAMIC_CONFIG } from '../../../infra/temporal-server';
import { quorumSearchAttributes } from '../../../workflows/search-attributes';

// No Docker engine runs here, so the production topology is checked by reading it.
const Service = z.object({
  image: z.string().optional(),
  build: z.unknown().optional(),
  command: z.union([z.string(), z.array(z.string())]).optional(),
  environment: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
  depends_on: z.union([z.array(z.string()), z.record(z.string(), z.object({ condition: z.string() }))]).optional(),
  ports: z.array(z.string()).optional(),
  volumes: z.array(z.string()).optional(),
  stop_grace_period: z.string().optional(),
});
const Compose = z.object({ services: z.record(z.string(), Service) });

const root = path.join(__dirname, '..', '..', '..');
const compose = Compose.parse(parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }));
const svc = (name: string): z.infer<typeof Service> => {
  const s = compose.services[name];
  assert.ok(s, `service ${name} missing`);
  return s;
};
const env = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(svc(name).environment ?? {}).map(([k, v]) => [k, String(v)]));
const deps = (name: string): string[] => {
  const d = svc(name).depends_on ?? [];
  return Array.isArray(d) ? d : Object.keys(d);
};
const commandText = (name: string): string => [svc(name).command ?? []].flat().join(' ');

describe('docker-compose.yml: the production topology', () => {
  it('has every service the stack needs', () => {
    for (const name of ['postgres', 'temporal', 'temporal-postgres', 'temporal-setup', 'temporal-ui', 'migrate', 'api', 'worker'])
      svc(name);
  });

  it('runs Temporal on Postgres persistence and points the UI at it', () => {
    assert.equal(env('temporal').DB, 'postgres12');
    assert.equal(env('temporal').POSTGRES_SEEDS, 'temporal-postgres');
    assert.ok(deps('temporal').includes('temporal-postgres'));
    assert.equal(env('temporal-ui').TEMPORAL_ADDRESS, 'temporal:7233');
  });

  it('gives Temporal the same dynamic config as the dev server and the test harness', () => {
    const mount = svc('temporal').volumes?.find((v) => v.endsWith(`/etc/temporal/${env('temporal').DYNAMIC_CONFIG_FILE_PATH}:ro`));
    assert.ok(mount, 'the dynamic config file is mounted where DYNAMIC_CONFIG_FILE_PATH points');
    const file = z
      .record(z.string(), z.array(z.object({ value: z.number() })).length(1))
      .parse(parse(fs.readFileSync(path.join(root, mount.split(':')[0]), 'utf8')));
    assert.deepEqual(Object.fromEntries(Object.entries(file).map(([key, [entry]]) => [key, entry?.value])), TEMPORAL_DYNAMIC_CONFIG);
  });

  it('registers every Quorum search attribute', () => {
    for (const key of quorumSearchAttributes) assert.match(commandText('temporal-setup'), new RegExp(`\\b${key.name}\\b`));
    assert.match(commandText('temporal-setup'), /--type Keyword/);
  });

  it('builds api, worker and migrate from the one Dockerfile, wired only by environment', () => {
    assert.ok(fs.existsSync(path.join(root, 'Dockerfile')));
    for (const name of ['api', 'worker', 'migrate']) {
      assert.equal(svc(name).build, '.', `${name} must build from the repo's Dockerfile`);
      assert.match(env(name).DATABASE_URL, /@postgres:5432\/quorum$/);
      assert.ok(deps(name).includes('postgres') || deps(name).includes('migrate'), `${name} must wait for the database`);
    }
    for (const name of ['api', 'worker']) {
      assert.equal(env(name).TEMPORAL_ADDRESS, 'temporal:7233');
      assert.equal(env(name).QUORUM_ENV, 'production');
      assert.ok(env(name).QUORUM_SECRET_KEY, `${name} needs QUORUM_SECRET_KEY in production`);
      assert.ok(deps(name).includes('migrate') && deps(name).includes('temporal-setup'));
    }
    // The image holds compiled JavaScript under dist/ (see the Dockerfile), not the TypeScript sources.
    assert.equal(commandText('api'), 'node dist/api/main.js');
    assert.equal(commandText('worker'), 'node dist/worker/main.js');
    assert.equal(commandText('migrate'), 'node dist/db/migrate.js');
    const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    assert.match(dockerfile, /npm run build/);
    for (const name of ['api', 'worker', 'migrate'])
      assert.ok(
        fs.existsSync(
          path.join(
            root,
            commandText(name)
              .split(' ')[1]
              .replace(/^dist\//, '')
              .replace(/\.js$/, '.ts'),
          ),
        ),
        `${name}: its entry point's source exists`,
      );
    assert.ok(svc('api').ports?.some((p) => p.endsWith(':8080')));
  });

  it('lets api and worker drain on stop: Docker waits past their shutdown grace before SIGKILL', () => {
    for (const name of ['api', 'worker']) {
      const seconds = /^(\d+)s$/.exec(svc(name).stop_grace_period ?? '')?.[1];
      assert.ok(seconds, `${name}: stop_grace_period in seconds (Docker's default is 10 s)`);
      assert.ok(
        Number(seconds) * 1000 >=
          loadConfig({ QUORUM_SHUTDOWN_GRACE_MS: env(name).QUORUM_SHUTDOWN_GRACE_MS }).QUORUM_SHUTDOWN_GRACE_MS + SHUTDOWN_MARGIN_MS,
        `${name}: ${seconds} s`,
      );
    }
  });
});
