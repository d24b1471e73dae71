import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import pg from 'pg';
import { stringify } from 'yaml';
import { quorumSearchAttributes } from '../workflows/search-attributes';
import { NAMESPACE_RETENTION_HOURS } from './cluster-topology';
import type { GoProgram } from './go-binary';
import { repoRoot } from '../infra/paths';

const run = promisify(execFile);

/**
 * The production topology's Temporal (DESIGN §1), without Docker: the Temporal server itself, not the dev server,
 * on PostgreSQL persistence and visibility, with its Web UI. Both built from their Go modules, the same releases
 * docker-compose.yml runs as images (a test keeps the two equal).
 */
export const TEMPORAL_SERVER: GoProgram = {
  label: 'the Temporal server and its SQL schema tool',
  name: 'temporal-server',
  module: 'go.temporal.io/server',
  version: 'v1.29.1',
  packages: ['cmd/server', 'cmd/tools/sql'],
};
export const TEMPORAL_UI_SERVER: GoProgram = {
  label: 'the Temporal Web UI server',
  name: 'temporal-ui-server',
  module: 'github.com/temporalio/ui-server/v2',
  version: 'v2.42.1',
  packages: ['cmd/server'],
};

/** Shared with docker-compose.yml's `temporal` service (mounted there at DYNAMIC_CONFIG_FILE_PATH). */
export const DYNAMIC_CONFIG_FILE = path.join(repoRoot, 'deploy', 'temporal', 'dynamicconfig.yaml');

/**
 * The server's settings under the names the `temporalio/server` image reads from its environment (its
 * config_template.yaml), so docker-compose.yml and `npm run start:cluster` can be compared name by name. The
 * image's template is rendered by its own tool (dockerize), which the binary does not carry: `serverConfig` maps the
 * same names to the same config keys.
 */
export interface TemporalServerSettings {
  DB: 'postgres12';
  POSTGRES_SEEDS: string;
  DB_PORT: string;
  POSTGRES_USER: string;
  POSTGRES_PWD: string;
  DBNAME: string;
  VISIBILITY_DBNAME: string;
  /** Fixed when the cluster is created: history shards cannot be changed later (docs/cluster-operations.md sizes them). */
  NUM_HISTORY_SHARDS: string;
  DYNAMIC_CONFIG_FILE_PATH: string;
  BIND_ON_IP: string;
  TEMPORAL_BROADCAST_ADDRESS: string;
  FRONTEND_GRPC_PORT: string;
  FRONTEND_HTTP_PORT: string;
  FRONTEND_MEMBERSHIP_PORT: string;
  HISTORY_GRPC_PORT: string;
  HISTORY_MEMBERSHIP_PORT: string;
  MATCHING_GRPC_PORT: string;
  MATCHING_MEMBERSHIP_PORT: string;
  WORKER_GRPC_PORT: string;
  WORKER_MEMBERSHIP_PORT: string;
  PROMETHEUS_ENDPOINT: string;
  LOG_LEVEL: string;
}

/** Values docker-compose.yml's `temporal` service must give the same names (test/unit/stack/compose.test.ts). */
export const TEMPORAL_TOPOLOGY = {
  DB: 'postgres12',
  DBNAME: 'temporal',
  VISIBILITY_DBNAME: 'temporal_visibility',
  NUM_HISTORY_SHARDS: '4',
} as const satisfies Partial<TemporalServerSettings>;

/**
 * The server's ports, laid out from the frontend's as Temporal lays out its defaults (7233: history 7234, matching
 * 7235, worker 7239, HTTP 7243, each service's membership port 300 below its gRPC one, metrics 8000). Membership
 * ports are stored in a smallint column: the frontend's port must stay below 32768 + 300.
 */
export function temporalPorts(frontend: number): TemporalPortSettings {
  const at = (offset: number): string => String(frontend + offset);
  return {
    FRONTEND_GRPC_PORT: at(0),
    HISTORY_GRPC_PORT: at(1),
    MATCHING_GRPC_PORT: at(2),
    WORKER_GRPC_PORT: at(6),
    FRONTEND_HTTP_PORT: at(10),
    FRONTEND_MEMBERSHIP_PORT: at(-300),
    HISTORY_MEMBERSHIP_PORT: at(1 - 300),
    MATCHING_MEMBERSHIP_PORT: at(2 - 300),
    WORKER_MEMBERSHIP_PORT: at(6 - 300),
    PROMETHEUS_ENDPOINT: `127.0.0.1:${at(767)}`,
  };
}
export type TemporalPortSettings = Pick<
  TemporalServerSettings,
  | 'FRONTEND_GRPC_PORT'
  | 'HISTORY_GRPC_PORT'
  | 'MATCHING_GRPC_PORT'
  | 'WORKER_GRPC_PORT'
  | 'FRONTEND_HTTP_PORT'
  | 'FRONTEND_MEMBERSHIP_PORT'
  | 'HISTORY_MEMBERSHIP_PORT'
  | 'MATCHING_MEMBERSHIP_PORT'
  | 'WORKER_MEMBERSHIP_PORT'
  | 'PROMETHEUS_ENDPOINT'
>;

/** The schemas the SQL tool carries for each database (`--schema-name`). */
export const TEMPORAL_SCHEMAS = { persistence: 'postgresql/v12/temporal', visibility: 'postgresql/v12/visibility' } as const;

/** The server's YAML config for these settings, key for key as the image's config_template.yaml maps them. */
export function serverConfig(s: TemporalServerSettings): string {
  const store = (database: string, maxConns: number): object => ({
    sql: {
      pluginName: s.DB,
      databaseName: database,
      connectAddr: `${s.POSTGRES_SEEDS}:${s.DB_PORT}`,
      connectProtocol: 'tcp',
      user: s.POSTGRES_USER,
      password: s.POSTGRES_PWD,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (grpcPort: string, membershipPort: string, httpPort?: string): object => ({
    rpc: {
      grpcPort: Number(grpcPort),
      membershipPort: Number(membershipPort),
      bindOnIP: s.BIND_ON_IP,
      ...(httpPort ? { httpPort: Number(httpPort) } : {}),
    },
  });
  return stringify({
    log: { stdout: true, level: s.LOG_LEVEL },
    persistence: {
      numHistoryShards: Number(s.NUM_HISTORY_SHARDS),
      defaultStore: 'default',
      visibilityStore: 'visibility',
      // The image's defaults (SQL_MAX_CONNS 20, SQL_VIS_MAX_CONNS 10).
      datastores: { default: store(s.DBNAME, 20), visibility: store(s.VISIBILITY_DBNAME, 10) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: s.TEMPORAL_BROADCAST_ADDRESS },
      metrics: { prometheus: { timerType: 'histogram', listenAddress: s.PROMETHEUS_ENDPOINT } },
    },
    services: {
      frontend: rpc(s.FRONTEND_GRPC_PORT, s.FRONTEND_MEMBERSHIP_PORT, s.FRONTEND_HTTP_PORT),
      matching: rpc(s.MATCHING_GRPC_PORT, s.MATCHING_MEMBERSHIP_PORT),
      history: rpc(s.HISTORY_GRPC_PORT, s.HISTORY_MEMBERSHIP_PORT),
      worker: rpc(s.WORKER_GRPC_PORT, s.WORKER_MEMBERSHIP_PORT),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `${s.BIND_ON_IP}:${s.FRONTEND_GRPC_PORT}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    dynamicConfigClient: { filepath: s.DYNAMIC_CONFIG_FILE_PATH, pollInterval: '10s' },
  });
}

/**
 * Temporal's two databases, created when missing, their schema set up (a no-op once there) and upgraded to the
 * tool's latest (a no-op when current) on every start, as the compose `temporal-schema` service does. The tool reads
 * its connection from the environment (SQL_*), which keeps the password out of the process list.
 */
export async function ensureTemporalSchema(
  sqlTool: string,
  s: TemporalServerSettings,
  inherited: Readonly<NodeJS.ProcessEnv>,
): Promise<void> {
  const admin = new pg.Client({
    host: s.POSTGRES_SEEDS,
    port: Number(s.DB_PORT),
    user: s.POSTGRES_USER,
    password: s.POSTGRES_PWD,
    database: 'postgres',
  });
  await admin.connect();
  try {
    for (const [database, schema] of [
      [s.DBNAME, TEMPORAL_SCHEMAS.persistence],
      [s.VISIBILITY_DBNAME, TEMPORAL_SCHEMAS.visibility],
    ] as const) {
      const exists = await admin.query('select 1 from pg_database where datname = $1', [database]);
      if (exists.rowCount === 0) await admin.query(`create database "${database}"`);
      const env = { ...inherited, ...temporalSqlToolEnv(s), SQL_DATABASE: database };
      await run(sqlTool, ['setup-schema', '-v', '0.0'], { env });
      await run(sqlTool, ['update-schema', '--schema-name', schema], { env });
    }
  } finally {
    await admin.end();
  }
}

/** The SQL tool's connection, under the variables it reads (the compose `temporal-schema` service sets the same). */
export function temporalSqlToolEnv(s: TemporalServerSettings): Record<string, string> {
  return { SQL_PLUGIN: s.DB, SQL_HOST: s.POSTGRES_SEEDS, SQL_PORT: s.DB_PORT, SQL_USER: s.POSTGRES_USER, SQL_PASSWORD: s.POSTGRES_PWD };
}

/** The Temporal server (all four services in one process, as the image runs it), its config written under `dir`. */
export function spawnTemporalServer(binary: string, dir: string, s: TemporalServerSettings): ChildProcess {
  fs.mkdirSync(path.join(dir, 'config'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'config', 'cluster.yaml'), serverConfig(s), { mode: 0o600 });
  // Its own process group: a terminal's Ctrl-C is for the supervisor, which stops the server after our processes.
  return spawn(binary, ['--root', dir, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
}

/**
 * The namespace registered with Quorum's search attributes (the compose `temporal-setup` service), and usable: a new
 * namespace and new attributes reach the frontend's caches some seconds after they are written, so this waits
 * until a workflow start that sets every attribute is accepted (that probe is terminated at once).
 */
export async function ensureNamespace(address: string, namespace: string, timeoutMs = 120_000): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const service = connection.workflowService;
    try {
      await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE_RETENTION_HOURS} hours`) });
    } catch (err) {
      if (!isGrpcServiceError(err) || err.code !== ALREADY_EXISTS) throw err;
    }
    const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const known = await connection.operatorService.listSearchAttributes({ namespace });
        const missing = quorumSearchAttributes.filter((a) => !(a.name in (known.customAttributes ?? {})));
        if (missing.length > 0)
          await connection.operatorService.addSearchAttributes({
            namespace,
            searchAttributes: Object.fromEntries(missing.map((a) => [a.name, keyword])),
          });
        await probeStart(connection, namespace);
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`namespace ${namespace} not usable after ${timeoutMs} ms: ${String(err)}`, { cause: err });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection.close();
  }
}

async function probeStart(connection: Connection, namespace: string): Promise<void> {
  const client = new Client({ connection, namespace });
  const handle = await client.workflow.start('probe', {
    taskQueue: 'quorum-cluster-probe',
    workflowId: `quorum-cluster-probe-${Date.now()}`,
    typedSearchAttributes: quorumSearchAttributes.map((key) => ({ key, value: 'probe' })),
  });
  await handle.terminate('probe');
}

/** gRPC's ALREADY_EXISTS, as the SDK's service errors carry it. */
const ALREADY_EXISTS = 6;

/** The Temporal Web UI server pointed at the cluster, its config written under `dir`. */
export function spawnTemporalUi(
  binary: string,
  dir: string,
  o: { temporalAddress: string; port: number; namespace: string },
): ChildProcess {
  fs.mkdirSync(path.join(dir, 'config'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'config', 'cluster.yaml'),
    stringify({
      temporalGrpcAddress: o.temporalAddress,
      host: '127.0.0.1',
      port: o.port,
      enableUi: true,
      defaultNamespace: o.namespace,
      cors: { allowOrigins: [`http://127.0.0.1:${o.port}`, `http://localhost:${o.port}`] },
      auth: { enabled: false },
    }),
  );
  return spawn(binary, ['--root', dir, '--env', 'cluster', 'start'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
}
