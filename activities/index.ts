// activities/: all the I/O the workflows need (engines, Postgres, search), one factory per workflow family.
import { createAccountEventActivities } from './account-events';
import { createAccountActivities } from './accounts';
import { createBenchmarkActivities } from './benchmark';
import { createCallbackActivities } from './callbacks';
import { createDeliberationActivities } from './deliberation';
import type { ActivityDeps } from './deps';

export type { ActivityDeps } from './deps';

/** Temporal samples' habit: a factory closing over dependencies, so tests pass real ones of their own. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createAccountActivities(deps),
    ...createDeliberationActivities(deps),
    ...createBenchmarkActivities(deps),
    ...createCallbackActivities(deps),
    ...createAccountEventActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
