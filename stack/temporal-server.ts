import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { quorumSearchAttributes } from '../workflows/search-attributes';
import type { TemporalConnectOptions } from '../infra/temporal-connection';

export interface DevServerOptions {
  binary: string;
  port: number;
  uiPort: number;
  dbFile: string;
  namespace: string;
}

/**
 * Temporal server settings we change from their defaults, for every server we run (dev server, test harness, and
 * `deploy/temporal-dynamic-config.yaml` for compose, which a test keeps equal to this table).
 * - transferProcessorMaxPollRPS: history reads each shard's transfer queue (the step that hands a new workflow or
 *   activity task to matching) at most 20 times a second by default. Once a burst (three parallel seats) spends
 *   the limiter's tokens, every later hop of a deliberation waits ~45 ms for the next read: ~450 ms on a panel.
 *   The reader only reads when notified of a new task, so a higher limit costs nothing when idle.
 * - matching.numTaskqueue{Read,Write}Partitions: a task queue is split in 4 partitions by default. A task written to
 *   a partition with no poll waiting there waits about 2 s for one: 0.2% of starts that are not eager (an API apart
 *   from its workers; every run's activities) one at a time, 3% four at a time, took 2.0 s instead of 25–70 ms; with
 *   one partition none of 8,000 did (docs/performance.md). One partition serves far more tasks a second than a worker
 *   fleet of this size hands it; raise both together for a task queue that outgrows it (cluster-operations.md).
 */
export const TEMPORAL_DYNAMIC_CONFIG: Readonly<Record<string, number>> = {
  'history.transferProcessorMaxPollRPS': 1000,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
};

/**
 * The dev server's SQLite file in write-ahead-log mode, synced at checkpoints rather than at every commit: a
 * deliberation's few history writes stop waiting on fsync (DESIGN §13). What it trades: a power cut (not a crash of
 * the server, whose writes the OS still holds) may lose the last moments of history; a workflow lost so is a call its
 * client retries with the same key. The test stack's server keeps SQLite in memory, where neither applies.
 */
export const SQLITE_PRAGMAS: Readonly<Record<string, string>> = { journal_mode: 'wal', synchronous: 'normal' };

export function sqlitePragmaArgs(): string[] {
  return Object.entries(SQLITE_PRAGMAS).flatMap(([pragma, value]) => ['--sqlite-pragma', `${pragma}=${value}`]);
}

export function dynamicConfigArgs(): string[] {
  return Object.entries(TEMPORAL_DYNAMIC_CONFIG).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${value}`]);
}

/** `--search-attribute Name=Keyword` for each of ours, so workflows can set them from their first run. */
export function searchAttributeArgs(): string[] {
  return quorumSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=${capitalise(key.type)}`]);
}

function capitalise(type: string): string {
  return type.charAt(0) + type.slice(1).toLowerCase();
}

/** Temporal's dev server with SQLite persistence and the Web UI, as a child of this process. */
export function spawnDevServer(o: DevServerOptions): ChildProcess {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(o.port),
    '--ui-port',
    String(o.uiPort),
    '--db-filename',
    o.dbFile,
    ...sqlitePragmaArgs(),
    '--namespace',
    o.namespace,
    '--log-level',
    'warn',
    ...searchAttributeArgs(),
    ...dynamicConfigArgs(),
  ];
  // Its own process group: a terminal's Ctrl-C is for the supervisor, which stops the server last.
  return spawn(o.binary, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
}

/**
 * Resolves when the frontend answers and the namespace exists. `target`: a local server's plain address, or an
 * existing cluster's options (temporalConnectOptions: TLS, API key).
 */
export async function waitForTemporal(target: string | TemporalConnectOptions, namespace: string, timeoutMs = 120_000): Promise<void> {
  const options = typeof target === 'string' ? { address: target } : target;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const connection = await Connection.connect({ ...options, connectTimeout: 2_000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`Temporal at ${options.address} not ready after ${timeoutMs} ms: ${String(last)}`);
}
