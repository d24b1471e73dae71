import { envLookup, loadConfig, type Config, type EnvLookup } from '../../infra/config';
import { createEngines, type Engines } from '../../engines';
import type { Logger } from '../../infra/log';
import { loadSecretBox, type SecretBox } from '../../infra/secret-box';

/**
 * What an entry point builds from its environment, built from a test's (or a bench's) own: the validated Config and
 * the lookup of the variables read by name. Spread into createEngines' options: `createEngines({ ...settingsOf(env) })`.
 */
export function settingsOf(env: NodeJS.ProcessEnv): { config: Config; variable: EnvLookup } {
  return { config: loadConfig(env), variable: envLookup(env) };
}

/**
 * The box the tests' in-process apps, workers and operations seal with: from the run's environment, whose master key
 * the test stack fixes for the run (test/harness/stack.ts), so child processes started with it open the same rows.
 */
export function testSecretBox(): SecretBox {
  return loadSecretBox(loadConfig());
}

/** What an entry point hands the app or the workers, from a test's environment: its Config, engines and box. */
export function entrySettingsOf(env: NodeJS.ProcessEnv, log?: Logger): { config: Config; engines: Engines; box: SecretBox } {
  return { config: loadConfig(env), engines: createEngines({ ...settingsOf(env), logger: log }), box: testSecretBox() };
}
