/**
 * One topology, two descriptions (DESIGN §1): docker-compose.yml and `npm run start:cluster` (stack/supervisor.ts).
 * These are its services under compose's names, and what a worker or API is given to join it; the supervisor runs
 * them by these names and test/unit/stack/compose.test.ts holds the compose file to them (services, variables, ports).
 */
export const CLUSTER_SERVICES = {
  postgres: 'postgres',
  temporalPostgres: 'temporal-postgres',
  /** One-shot: Temporal's databases and schema, set up and upgraded. */
  temporalSchema: 'temporal-schema',
  temporal: 'temporal',
  /** One-shot: the namespace and Quorum's search attributes. */
  temporalSetup: 'temporal-setup',
  temporalUi: 'temporal-ui',
  /** One-shot: Quorum's migrations. */
  migrate: 'migrate',
  worker: 'worker',
  api: 'api',
} as const;

/** How long Temporal keeps a closed workflow's history in the cluster's namespace (the dev server's default is a day). */
export const NAMESPACE_RETENTION_HOURS = 72;

/** What every worker and API process is given to join the cluster, beyond the operator's own settings. */
export function joinClusterEnv(o: { databaseUrl: string; temporalAddress: string; namespace: string }): {
  DATABASE_URL: string;
  TEMPORAL_ADDRESS: string;
  TEMPORAL_NAMESPACE: string;
} {
  return { DATABASE_URL: o.databaseUrl, TEMPORAL_ADDRESS: o.temporalAddress, TEMPORAL_NAMESPACE: o.namespace };
}
