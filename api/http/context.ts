import type { OAuthServer } from '../oauth/server';
import type { FormSerialiser } from '../forms';
import type { OperationDeps } from '../../operations/deps';

/** What every `/v1` handler works with: the operations' dependencies and this deployment's serialiser. */
export interface RouteDeps extends OperationDeps {
  serialiser: FormSerialiser;
  /** The deployment's settings (QUORUM_ENV, QUORUM_SIM_STANDINS…). */
  env: NodeJS.ProcessEnv;
  /** The authorization server of connected apps: it knows their access tokens. */
  oauth: OAuthServer;
}
