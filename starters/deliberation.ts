// starters/: the client side of each workflow (start, signal, query), for the API, the CLI and the worker.
import { WorkflowNotFoundError, type Client, type WorkflowHandleWithStartDetails } from '@temporalio/client';
import { laneFor } from '../domain/seat-assignment';
import { workflowIds } from '../domain/workflow-ids';
import type { deliberationWorkflow, DeliberationInput } from '../workflows/deliberation';
import { QuorumLane, QuorumMode, QuorumOrg, QuorumStatus } from '../workflows/search-attributes';
import { TASK_QUEUES } from '../workflows/task-queues';

/** A start is one server round trip (milliseconds when healthy). */
const START_DEADLINE_MS = 5_000;

/**
 * Starts one deliberation under its idempotency key's workflow id (DESIGN §4). The caller decides from the request
 * row whether a deliberation may start; the server refuses a second live execution under the same id (conflict
 * policy FAIL), and a finished one may run again (a failed call, or a capped one on Form B).
 */
export function startDeliberation(
  client: Client,
  input: DeliberationInput,
  opts: { idempotencyKey: string; model: string },
): Promise<WorkflowHandleWithStartDetails<typeof deliberationWorkflow>> {
  // A stalled Temporal must not hold the caller: past the deadline the API answers 503 and the key may be retried.
  return client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
    client.workflow.start<typeof deliberationWorkflow>('deliberationWorkflow', {
      taskQueue: TASK_QUEUES.deliberation,
      workflowId: workflowIds.deliberation(input.orgId, opts.idempotencyKey),
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      // The engine calls run inside the workflow's task (ENGINE_CALL_LOCAL), which the worker heartbeats at 80% of
      // this: how often a long call's progress query is answered (the server holds a query while the task runs) and
      // how soon another worker takes over from one that died. Half the default of 10 s: about one heartbeat per engine
      // call at the spec's latencies, where today's activities cost three events each.
      workflowTaskTimeout: '5 seconds',
      args: [input],
      // Set once here and once at the end by the workflow (and after classifying when the workflow classifies), so an operator can find any call in the Temporal UI.
      typedSearchAttributes: [
        { key: QuorumOrg, value: input.orgId },
        { key: QuorumMode, value: input.form === 'A' ? input.mode.id : input.mode.ticker },
        // Known already when the API classified the prompt (see DeliberationInput.classification).
        { key: QuorumLane, value: input.classification ? laneFor(input.mode.config, input.tier, input.classification) : 'pending' },
        { key: QuorumStatus, value: 'running' },
      ],
      memo: { requestId: input.requestId, model: opts.model, tier: input.tier },
    }),
  );
}

/** The key's workflow's status, or `NOT_FOUND` when none was ever started under it (or retention removed it). */
export async function workflowStatus(client: Client, workflowId: string): Promise<string> {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw err;
  }
}
