import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { CLUSTER_SERVICES, joinClusterEnv, NAMESPACE_RETENTION_HOURS } from '../../../stack/cluster-topology';
import { loadConfig, SHUTDOWN_MARGIN_MS } from '../../../infra/config';
import {
  TEMPORAL_SCHEMAS,
  TEMPORAL_SERVER,
  TEMPORAL_TOPOLOGY,
  TEMPORAL_UI_SERVER,
  temporalPorts,
  temporalSqlToolEnv,
  type TemporalServerSettings,
} from '../../../stack/temporal-cluster';
import { TEMPORAL_DYNAMIC_CONFIG } from '../../../stack/temporal-server';
import { PROCESS_NODE_FLAGS, processNodeFlags } from '../../../infra/entry-point';
import { quorumSearchAttributes } from '../../../workflows/search-attributes';

// No Docker engine runs here, so the production topology is checked by reading it.
const Service = z.object({
  image: z.string().optional(),
  build: z.unknown().optional(),
  command: z.union([z.string(), z.array(z.string())]).optional(),
  environment: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
  depends_on: z.union([z.array(z.string()), z.record(z.string(), z.object({ condition: z.string() }))]).optional(),
  ports: z.array(z.string()).optional(),
  deploy: z.object({ replicas: z.number().int() }).optional(),
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
/** A compose value as Docker reads it with nothing set: `${X:-d}` is d. */
const withDefaults = (value: string): string => value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
/** `npm run start:cluster`'s settings with none of ours set. */
const defaults = loadConfig({});

describe('docker-compose.yml: the production topology', () => {
  it('has the services npm run start:cluster runs, by the same names', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), Object.values(CLUSTER_SERVICES).sort());
  });

  it('runs the Temporal server and UI releases the cluster command builds, on Postgres persistence and visibility', () => {
    const tag = (program: { version: string }): string => program.version.replace(/^v/, '');
    assert.equal(svc(CLUSTER_SERVICES.temporal).image, `temporalio/server:${tag(TEMPORAL_SERVER)}`);
    for (const name of [CLUSTER_SERVICES.temporalSchema, CLUSTER_SERVICES.temporalSetup])
      assert.equal(svc(name).image, `temporalio/admin-tools:${tag(TEMPORAL_SERVER)}`);
    assert.equal(svc(CLUSTER_SERVICES.temporalUi).image, `temporalio/ui:${tag(TEMPORAL_UI_SERVER)}`);
    for (const [key, value] of Object.entries(TEMPORAL_TOPOLOGY))
      assert.equal(withDefaults(env(CLUSTER_SERVICES.temporal)[key] ?? ''), value, `temporal: ${key}`);
    assert.equal(env(CLUSTER_SERVICES.temporal).POSTGRES_SEEDS, CLUSTER_SERVICES.temporalPostgres);
    assert.ok(deps(CLUSTER_SERVICES.temporal).includes(CLUSTER_SERVICES.temporalSchema));
    assert.equal(env(CLUSTER_SERVICES.temporalUi).TEMPORAL_ADDRESS, `${CLUSTER_SERVICES.temporal}:${defaults.TEMPORAL_PORT}`);
  });

  it("sets up and upgrades Temporal's schema as the cluster command does: same tool variables, databases and schemas", () => {
    const schemaEnv = env(CLUSTER_SERVICES.temporalSchema);
    const ours = temporalSqlToolEnv({ ...TEMPORAL_TOPOLOGY } as TemporalServerSettings);
    assert.deepEqual(Object.keys(schemaEnv).sort(), Object.keys(ours).sort());
    assert.equal(schemaEnv.SQL_PLUGIN, TEMPORAL_TOPOLOGY.DB);
    assert.equal(schemaEnv.SQL_HOST, CLUSTER_SERVICES.temporalPostgres);
    const command = commandText(CLUSTER_SERVICES.temporalSchema);
    assert.match(command, new RegExp(`\\b${TEMPORAL_TOPOLOGY.DBNAME}:${TEMPORAL_SCHEMAS.persistence}\\b`));
    assert.match(command, new RegExp(`\\b${TEMPORAL_TOPOLOGY.VISIBILITY_DBNAME}:${TEMPORAL_SCHEMAS.visibility}\\b`));
    assert.match(command, /setup-schema -v 0\.0/);
    assert.match(command, /update-schema --schema-name/);
  });

  it("registers the namespace with the cluster's retention", () => {
    assert.match(
      commandText(CLUSTER_SERVICES.temporalSetup),
      new RegExp(`namespace create --namespace ${defaults.TEMPORAL_NAMESPACE} --retention ${NAMESPACE_RETENTION_HOURS}h`),
    );
  });

  it('publishes the ports the cluster command listens on, and runs as many workers and APIs', () => {
    const frontend = defaults.TEMPORAL_PORT;
    assert.deepEqual(svc(CLUSTER_SERVICES.temporal).ports, [`${frontend}:${frontend}`]);
    assert.equal(
      env(CLUSTER_SERVICES.temporal).PROMETHEUS_ENDPOINT?.split(':')[1],
      temporalPorts(frontend).PROMETHEUS_ENDPOINT.split(':')[1],
      "the Temporal server's metrics port",
    );
    assert.deepEqual(
      svc(CLUSTER_SERVICES.temporalUi).ports?.map((p) => p.split(':')[0]),
      [String(defaults.TEMPORAL_UI_PORT)],
    );
    assert.equal(svc(CLUSTER_SERVICES.worker).deploy?.replicas, defaults.QUORUM_CLUSTER_WORKERS);
    assert.equal(svc(CLUSTER_SERVICES.api).deploy?.replicas, defaults.QUORUM_CLUSTER_APIS);
    const lastApiPort = defaults.PORT + defaults.QUORUM_CLUSTER_APIS - 1;
    assert.deepEqual(svc(CLUSTER_SERVICES.api).ports, [`${defaults.PORT}-${lastApiPort}:${env(CLUSTER_SERVICES.api).PORT}`]);
  });

  it('joins every worker and API to the cluster through the variables the cluster command sets', () => {
    const joined = joinClusterEnv({ databaseUrl: '', temporalAddress: '', namespace: '' });
    for (const name of [CLUSTER_SERVICES.worker, CLUSTER_SERVICES.api]) {
      for (const key of Object.keys(joined)) assert.ok(env(name)[key], `${name}: ${key}`);
      assert.equal(env(name).TEMPORAL_ADDRESS, `${CLUSTER_SERVICES.temporal}:${defaults.TEMPORAL_PORT}`);
      assert.equal(env(name).TEMPORAL_NAMESPACE, defaults.TEMPORAL_NAMESPACE);
    }
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
    // The image's processes run with the Node flags every product process the supervisor starts has, for the image's Node.
    const imageNode = [...dockerfile.matchAll(/^FROM node:(\d+)/gm)].at(-1)?.[1];
    assert.ok(imageNode, 'the runtime stage names its Node major');
    const imageFlags = processNodeFlags(Number(imageNode)).join(' ');
    assert.ok(dockerfile.includes(`ENV NODE_OPTIONS="${imageFlags}"`), `the Dockerfile sets NODE_OPTIONS="${imageFlags}"`);
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

  it("runs the tests' own process with the product's AsyncLocalStorage model (.mocharc.cjs)", () => {
    const mocharc = createRequire(__filename)(path.join(root, '.mocharc.cjs')) as { 'node-option': string[] };
    assert.equal(
      mocharc['node-option'].includes('experimental-async-context-frame'),
      PROCESS_NODE_FLAGS.includes('--experimental-async-context-frame'),
    );
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
