import type { WorkflowClientInterceptor } from '@temporalio/client';

/**
 * For a client that shares its NativeConnection with a worker in the same process (QUORUM_ROLE=all): every start
 * asks for Eager Workflow Start, so the server hands the first workflow task back in the start's reply and this
 * process runs it at once (no poll: about 35 ms and a third of Temporal's CPU off a short call, DESIGN §13). The
 * server falls back to a normal start when the worker has no free slot; a client without a worker must not ask (the
 * SDK refuses).
 */
export const eagerStart: WorkflowClientInterceptor = {
  startWithDetails: (input, next) => next({ ...input, options: { ...input.options, requestEagerStart: true } }),
};
