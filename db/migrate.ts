import { loadConfig } from '../infra/config';
import { createDb } from './knex';
import { prepareDatabase } from './prepare';

/** One-shot migration and system-mode seed for deployments (the compose `migrate` service); `npm start` does it in-process. */
async function main(): Promise<void> {
  const url = loadConfig().DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is required');
  const db = createDb(url, 1);
  try {
    const { migrations: applied } = await prepareDatabase(db);
    process.stdout.write(`applied ${applied.length} migration(s)${applied.length ? `: ${applied.join(', ')}` : ''}\n`);
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`migration failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
