import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { createLogger, type Logger } from './log';
import { dataDir } from './paths';
import { registerSecret } from './redact';

/**
 * AES-256-GCM for provider keys at rest (DESIGN §6). The master key comes from `QUORUM_SECRET_KEY`:
 * exactly 32 bytes written as 64 hex characters or as base64 (44 characters with padding, or 43 without).
 */
export interface Sealed {
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
}

export interface SecretBox {
  /** `context` is authenticated but not encrypted: a ciphertext only opens under the same context (e.g. its row). */
  seal(plaintext: string, context: string): Sealed;
  open(sealed: Sealed, context: string): string;
}

const KEY_BYTES = 32;
const IV_BYTES = 12;

export function parseMasterKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : /^[A-Za-z0-9+/_-]{43}={0,1}$/.test(trimmed)
      ? Buffer.from(trimmed, 'base64')
      : undefined;
  if (!key || key.length !== KEY_BYTES) {
    throw new Error('QUORUM_SECRET_KEY must be 32 bytes as 64 hex characters or base64 (e.g. `openssl rand -base64 32`)');
  }
  return key;
}

export function createSecretBox(masterKey: Buffer): SecretBox {
  if (masterKey.length !== KEY_BYTES) throw new Error(`master key must be ${KEY_BYTES} bytes`);
  return {
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return { ciphertext, iv, tag: cipher.getAuthTag() };
    },
    open({ ciphertext, iv, tag }, context) {
      const decipher = createDecipheriv('aes-256-gcm', masterKey, iv);
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tag);
      try {
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
      } catch {
        throw new Error('stored provider credential does not open with this QUORUM_SECRET_KEY (was it changed?)');
      }
    },
  };
}

/** Development convenience: a random key kept under the data folder, so restarts still open what was sealed. */
function localDevKey(log: Logger): string {
  const file = path.join(dataDir, 'secret.key');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true });
    try {
      fs.writeFileSync(file, randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (err) {
      // Another process created it first: use theirs.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  log.warn('QUORUM_SECRET_KEY is not set: using a local development key; set it in production', { file });
  return fs.readFileSync(file, 'utf8');
}

/** The master key from config; production refuses to run without one. Registered so it can never be logged. */
export function loadSecretBox(
  config: Pick<Config, 'QUORUM_ENV' | 'QUORUM_SECRET_KEY'>,
  log: Logger = createLogger('secret-box'),
): SecretBox {
  let text = config.QUORUM_SECRET_KEY;
  if (!text) {
    if (config.QUORUM_ENV === 'production') throw new Error('QUORUM_SECRET_KEY is required when QUORUM_ENV=production');
    text = localDevKey(log);
  }
  registerSecret(text.trim());
  return createSecretBox(parseMasterKey(text));
}

/**
 * The box of `config`, built on its first seal or open: the CLI's commands that keep no secret, and an API until it
 * first opens one, then neither need the master key nor make the development one (the worker builds its box at start).
 */
export function deferredSecretBox(config: Pick<Config, 'QUORUM_ENV' | 'QUORUM_SECRET_KEY'>): SecretBox {
  let box: SecretBox | undefined;
  const built = (): SecretBox => (box ??= loadSecretBox(config));
  return { seal: (plaintext, context) => built().seal(plaintext, context), open: (sealed, context) => built().open(sealed, context) };
}
