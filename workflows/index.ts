// workflows/: deterministic orchestration only (the I/O is in activities/); every workflow the worker registers.
export * from './trial-credit';
export * from './deliberation';
export * from './benchmark';
export * from './question';
export { runCallbackWorkflow } from './run-callback';
export { accountEventWorkflow, accountUpkeepWorkflow } from './account-events';
