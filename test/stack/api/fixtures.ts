import { SYSTEM_MODES, type ModeConfig } from '../../../domain/modes';

/** A valid mode configuration to build test modes from. */
export function systemModeConfig(): ModeConfig {
  return structuredClone(SYSTEM_MODES[0].config);
}
