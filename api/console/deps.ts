import type { RunDeps } from '../../operations/run-settings';
import type { RouteDeps } from '../http/context';

/** What the console's pages work with: the API's operations and settings, and how cookies are set here. */
export interface ConsoleDeps extends RouteDeps, RunDeps {
  /** Secure cookies (production, behind TLS). */
  secureCookies: boolean;
  /** Development: a person may add test balance themselves (in production an operator tops up). */
  selfTopUp: boolean;
}
