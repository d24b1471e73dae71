/**
 * Secrets must never reach a log line or an error body. Known secret values are registered as they are read
 * (provider keys, the master key); key-shaped strings are masked by pattern as a second net.
 * The registry is process state, which is why this lives in infra/ and not in the pure domain/.
 */
const registered = new Set<string>();

const PATTERNS: readonly RegExp[] = [
  /qrm_(live|test)_[A-Za-z0-9]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{12,}/g,
  /\bsk-ant-[A-Za-z0-9_-]{12,}/g,
  /\bAIza[A-Za-z0-9_-]{20,}/g,
  /\b(AKIA|ASIA)[A-Z0-9]{12,}/g,
  /(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
];

export function registerSecret(value: string | undefined): void {
  // Very short values would mask ordinary words; nothing that short is a real credential.
  if (value && value.length >= 8) registered.add(value);
}

export function redact(text: string): string {
  let out = text;
  for (const secret of registered) out = out.split(secret).join('[redacted]');
  for (const pattern of PATTERNS) {
    out = out.replace(pattern, (_m: string, prefix: unknown) =>
      typeof prefix === 'string' && /bearer/i.test(prefix) ? `${prefix}[redacted]` : '[redacted]',
    );
  }
  return out;
}
