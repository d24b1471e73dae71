import { hash, verify } from '@node-rs/argon2';

/**
 * Password hashing with argon2id (`@node-rs/argon2`, a maintained Rust binding: no compile step, no install
 * script) at its defaults, which are OWASP's recommended minimum (19 MiB, 2 passes, 1 lane). The plaintext never
 * leaves these two calls.
 */
export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

export async function passwordMatches(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

/** A hash to verify against when no account exists, so a missing address costs the same time as a wrong password. */
export const DECOY_HASH = hash('quorum-decoy-password-never-valid');
