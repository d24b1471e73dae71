import { processSetting } from './config';

/**
 * Crash points for the fault tests: `QUORUM_FAULT=<name>` kills this process (SIGKILL, no cleanup) when it reaches
 * the point of that name, so a test can prove a step boundary loses nothing. Unset, as everywhere but those tests,
 * a point does nothing.
 */
export function faultPoint(name: string): void {
  if (processSetting('QUORUM_FAULT') === name) process.kill(process.pid, 'SIGKILL');
}
