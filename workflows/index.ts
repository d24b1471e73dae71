// Every workflow the worker registers, re-exported from its own module.
export * from './trial-credit';
export * from './deliberation';
export * from './benchmark';
export * from './question';
