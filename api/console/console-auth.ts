import type { AuthoringDeps } from '../../operations/authoring/modes';
import type { Principal } from '../../operations/principal';
import type { ConsoleDeps } from './deps';
import { personOf, type ConsoleUser } from './session';

/** What the mode builder's core needs of the console's deps. */
export function authoringDeps(deps: ConsoleDeps): AuthoringDeps {
  return { db: deps.db, form: deps.form, engines: deps.engines, env: deps.env };
}

export interface Authoring {
  deps: AuthoringDeps;
  author: Principal & { via: 'person' };
}

/** The mode builder's core, as the console calls it: the signed-in person, in the organisation their session chose. */
export function consoleAuthoring(deps: ConsoleDeps, user: ConsoleUser): Authoring {
  return { deps: authoringDeps(deps), author: personOf(user) };
}
