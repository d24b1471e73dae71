import type { AuthoringDeps } from '../../operations/authoring/modes';
import type { Principal } from '../../operations/principal';
import type { RouteDeps } from '../http/context';
import { personOf, type ConsoleUser } from './session';

/** What the mode builder's core needs of the console's deps. */
export function authoringDeps(deps: RouteDeps): AuthoringDeps {
  return { db: deps.db, form: deps.form, engines: deps.engines, config: deps.config };
}

export interface Authoring {
  deps: AuthoringDeps;
  author: Principal & { via: 'person' };
}

/** The mode builder's core, as the console calls it: the signed-in person, in the organisation their session chose. */
export function consoleAuthoring(deps: RouteDeps, user: ConsoleUser): Authoring {
  return { deps: authoringDeps(deps), author: personOf(user) };
}
