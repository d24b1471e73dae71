import { createEngines } from '../engines';
import { loadConfig } from '../infra/config';
import { settingsOf, testSecretBox } from '../test/harness/settings';
import { createLogger } from '../infra/log';
import { stack } from '../test/harness/stack';
import { bundleInChild } from '../worker/bundle';
import { configuredSlots, createWorkers } from '../worker/workers';

/**
 * The product's workers on the bench's stack, as `npm start` runs them (the workflow bundle built in a child, the
 * configured cache and activity slots), their engines from `engines.env` (a provider's environment, or sim engines at
 * a latency); `stop` shuts them down and waits.
 */
export async function startBenchWorkers(engines: { env: NodeJS.ProcessEnv; simLatency?: string }): Promise<{ stop(): Promise<void> }> {
  const { env, db, namespace } = stack();
  const log = createLogger('bench', () => undefined);
  const workers = await createWorkers({
    connection: env.nativeConnection,
    namespace,
    bundlePath: bundleInChild(),
    ...configuredSlots(loadConfig()),
    deps: {
      db,
      engines: createEngines({ ...settingsOf(engines.env), simLatency: engines.simLatency, logger: log }),
      log,
      config: loadConfig(),
      box: testSecretBox(),
    },
  });
  const running = Promise.all(workers.map((w) => w.run()));
  return {
    stop: async () => {
      for (const w of workers) w.shutdown();
      await running;
    },
  };
}
