import { processSetting } from './config';
import { redact } from './redact';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const threshold = ORDER[processSetting('QUORUM_LOG_LEVEL') ?? 'info'];

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

function errorFields(value: unknown): unknown {
  return value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;
}

/** One JSON line per event on stderr, every line passed through `redact`. */
export function createLogger(component: string, write: (line: string) => void = (l) => process.stderr.write(l + '\n')): Logger {
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (ORDER[level] < threshold) return;
    const body: Record<string, unknown> = { t: new Date().toISOString(), level, component, msg };
    for (const [k, v] of Object.entries(fields ?? {})) body[k] = errorFields(v);
    write(redact(JSON.stringify(body)));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
