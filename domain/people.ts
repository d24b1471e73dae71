/**
 * The rules for people's accounts (DESIGN §14), pure: what an email address and a password must be. Hashing and
 * storage live at the edges; these say what a person is told when a field is refused.
 */

/** NIST SP 800-63B: length is what makes a password strong; no composition rules, a generous maximum. */
export const PASSWORD_LIMITS = { min: 12, max: 256 } as const;
export const NAME_LIMITS = { min: 1, max: 100 } as const;

/** A deliberately plain check (something@something.tld); the invitation or sign-in proves the rest. */
const EMAIL = /^[^\s@<>]{1,64}@[^\s@<>]{1,255}\.[^\s@<>.]{2,63}$/;

export function normaliseEmail(raw: string): string | undefined {
  const email = raw.trim().toLowerCase();
  return email.length <= 320 && EMAIL.test(email) ? email : undefined;
}

/** Why a password is refused; empty when it is acceptable. */
export function passwordProblems(password: string, email: string): string[] {
  const problems: string[] = [];
  if ([...password].length < PASSWORD_LIMITS.min) problems.push(`Use at least ${PASSWORD_LIMITS.min} characters.`);
  if ([...password].length > PASSWORD_LIMITS.max) problems.push(`Use at most ${PASSWORD_LIMITS.max} characters.`);
  if (new Set(password).size < 4) problems.push('Use more than a few different characters.');
  const local = email.split('@')[0];
  if (local.length >= 4 && password.toLowerCase().includes(local.toLowerCase())) problems.push('Do not build it from your email address.');
  return problems;
}

export function nameProblems(name: string): string[] {
  const n = name.trim();
  if (n.length < NAME_LIMITS.min) return ['Enter a name.'];
  if (n.length > NAME_LIMITS.max) return [`Use at most ${NAME_LIMITS.max} characters.`];
  if (/[<>]|[^\P{Cc}]/u.test(n)) return ['Use no < or > or control characters.'];
  return [];
}

/** Sign-in attempts refused before checking the password: per address, and per client address, in a window. */
export const SIGN_IN_LIMITS = { windowMinutes: 15, failuresPerEmail: 5, failuresPerIp: 30 } as const;
/** How long a console session lasts without use, and at most. */
export const SESSION_LIMITS = { idleHours: 12, maxDays: 14 } as const;
export const INVITATION_DAYS = 7;
