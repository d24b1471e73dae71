import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { auditDatabase, chargedRuns, openHolds, type ChargedRun, type OpenHold } from '../db/repositories/audit';
import type { DbOrTrx } from '../db/repositories/shared';
import type { AuditScope, Violation } from '../domain/audit';
import { QuorumOrg } from '../workflows/search-attributes';

/**
 * The auditor (issue 26 item 18, DESIGN §7): the invariants of domain/audit.ts over the whole database (or the
 * organisations of `scope`) and, given a client, Temporal. `quorum audit` prints what this returns; the stack tests
 * call it after the suite and after each of their property's sequences. Read-only.
 */
export async function audit(db: DbOrTrx, client: Client | undefined, scope: AuditScope = {}): Promise<Violation[]> {
  const found = await auditDatabase(db, scope);
  if (client) found.push(...(await auditWorkflows(db, client, scope)), ...(await failingTasks(client, scope)));
  return found;
}

/** Workflows described at once: enough to be quick, few enough not to crowd a server that is also serving calls. */
const DESCRIBE_CONCURRENCY = 16;

/** A workflow as Temporal describes it: its status, its run, and the attempt of its workflow task (0: none pending). */
type Described = { status: string; closedAt: Date | null; runId: string; taskAttempt: number } | 'not_found';

async function describe(client: Client, workflowId: string): Promise<Described> {
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return { status: d.status.name, closedAt: d.closeTime ?? null, runId: d.runId, taskAttempt: d.raw.pendingWorkflowTask?.attempt ?? 0 };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'not_found';
    throw err;
  }
}

async function describeAll(client: Client, workflowIds: readonly string[]): Promise<Map<string, Described>> {
  const unique = [...new Set(workflowIds)];
  const out = new Map<string, Described>();
  for (let i = 0; i < unique.length; i += DESCRIBE_CONCURRENCY) {
    const batch = unique.slice(i, i + DESCRIBE_CONCURRENCY);
    const described = await Promise.all(batch.map((id) => describe(client, id)));
    batch.forEach((id, j) => out.set(id, described[j]));
  }
  return out;
}

/** How long the namespace keeps a closed workflow; after that a run's workflow may be gone without anything being wrong. */
async function retentionMs(client: Client): Promise<number> {
  const { config } = await client.workflowService.describeNamespace({ namespace: client.options.namespace });
  const ttl = config?.workflowExecutionRetentionTtl;
  return ttl ? Number(ttl.seconds ?? 0) * 1000 + Math.floor((ttl.nanos ?? 0) / 1e6) : 0;
}

/**
 * `run_charge_without_workflow`: a run charged and not refunded has its workflow (running while its row says the run
 * is going; an ended run's may be gone once older than the retention). `hold_outlives_request`: money held for a
 * running request has that request's workflow running.
 */
async function auditWorkflows(db: DbOrTrx, client: Client, scope: AuditScope): Promise<Violation[]> {
  const [runs, holds] = await Promise.all([chargedRuns(db, scope), openHolds(db, scope)]);
  const described = await describeAll(client, [...runs.map((r) => r.workflowId), ...holds.map((h) => h.workflowId)]);
  const found = judgeWorkflows(runs, holds, described, runs.some((r) => !r.live) ? await retentionMs(client) : 0);
  if (found.length === 0) return [];
  // On a live system a workflow may have ended its run or released its hold between the read and the describe. A
  // workflow closes only after its last write, so what the database still says after the describe is the finding.
  const [runsAfter, holdsAfter] = await Promise.all([chargedRuns(db, scope), openHolds(db, scope)]);
  const still = new Set([...runsAfter.map(runKey), ...holdsAfter.map(holdKey)]);
  return found.filter((f) => still.has(f.key)).map((f) => f.violation);
}

/** A finding and the row state it was judged in, to recheck it. */
interface Finding {
  key: string;
  violation: Violation;
}

const runKey = (r: ChargedRun): string => `run|${r.runId}|${r.state}`;
const holdKey = (h: OpenHold): string => `hold|${h.requestId}|${h.on}`;

function judgeWorkflows(
  runs: readonly ChargedRun[],
  holds: readonly OpenHold[],
  described: ReadonlyMap<string, Described>,
  retention: number,
): Finding[] {
  const found: Finding[] = [];
  for (const run of runs) {
    const d = described.get(run.workflowId) as Described;
    const ids = { org_id: run.orgId, run_id: run.runId, workflow_id: run.workflowId };
    let detail: string | undefined;
    if (d === 'not_found') {
      const expired = !run.live && run.finishedAt !== null && Date.now() - run.finishedAt.getTime() > retention;
      if (!expired) detail = `a ${run.state} run keeps its charge, but Temporal has no workflow ${run.workflowId}`;
    } else if (run.live && d.status !== 'RUNNING') {
      detail = `the run is still ${run.state} and keeps its charge, but its workflow is ${d.status.toLowerCase()}: nothing will end or refund it`;
    }
    if (detail) found.push({ key: runKey(run), violation: { invariant: 'run_charge_without_workflow', ids, detail } });
  }
  for (const hold of holds) {
    const d = described.get(hold.workflowId) as Described;
    if (d !== 'not_found' && d.status === 'RUNNING') continue;
    found.push({
      key: holdKey(hold),
      violation: {
        invariant: 'hold_outlives_request',
        ids: { org_id: hold.orgId, request_id: hold.requestId, workflow_id: hold.workflowId },
        detail: `${hold.amountMicros} µ$ held on the ${hold.on} for a running request whose workflow is ${
          d === 'not_found' ? 'missing' : d.status.toLowerCase()
        }: nothing will settle or release it`,
      },
    });
  }
  return found;
}

/**
 * A workflow task's attempt from which it counts as stuck: it failed, and failed again on its retry. One failure is a
 * blip a retry clears (a worker lost mid-task); a failing code path (a nondeterminism error, a workflow bug, a type no
 * worker exports) fails every retry, and Temporal retries it forever without the workflow moving.
 */
const STUCK_ATTEMPT = 3;
/** The newest events read for the failure's message: the failed task is among the last few of a stuck workflow. */
const TAIL_EVENTS = 20;
/** Enough of the failure's message to recognise it; the rest is in the Temporal UI. */
const MESSAGE_CHARS = 300;

/**
 * `workflow_task_failing` (issue 55): the open workflows of the scope (every one, unscoped: also those of no
 * organisation, such as the trial timers) whose workflow task has failed and is retrying at STUCK_ATTEMPT or later,
 * named with the failure's message. A task that only times out (no worker free, one lost) is not reported: it runs
 * once a worker takes it.
 */
async function failingTasks(client: Client, scope: AuditScope): Promise<Violation[]> {
  const orgs = scope.orgIds?.map((id) => `'${id.replaceAll("'", "''")}'`);
  if (orgs?.length === 0) return [];
  const query = `ExecutionStatus = 'Running'${orgs ? ` AND ${QuorumOrg.name} IN (${orgs.join(', ')})` : ''}`;
  const open: string[] = [];
  for await (const w of client.workflow.list({ query })) open.push(w.workflowId);
  const found: Violation[] = [];
  for (const [workflowId, d] of await describeAll(client, open)) {
    // Gone since the list (closed and deleted): nothing is stuck.
    if (d === 'not_found' || d.taskAttempt < STUCK_ATTEMPT) continue;
    const violation = await failingTask(client, workflowId, d);
    if (violation) found.push(violation);
  }
  return found;
}

/** A workflow retrying its task, named when the task's last end was a failure (not a timeout) with its message. */
async function failingTask(
  client: Client,
  workflowId: string,
  { runId, taskAttempt }: { runId: string; taskAttempt: number },
): Promise<Violation | undefined> {
  const { history } = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: TAIL_EVENTS,
  });
  const lastTask = history?.events?.find((e) => e.workflowTaskFailedEventAttributes || e.workflowTaskTimedOutEventAttributes);
  const failed = lastTask?.workflowTaskFailedEventAttributes;
  if (!failed) return undefined;
  const message = (failed.failure?.message ?? 'no message').slice(0, MESSAGE_CHARS);
  return {
    invariant: 'workflow_task_failing',
    ids: { workflow_id: workflowId },
    detail: `its workflow task failed and is on attempt ${taskAttempt}, so the workflow makes no progress: ${message}`,
  };
}
