import { createHash } from 'node:crypto';

/**
 * knex query options that send a statement as a named prepared statement (issue 42): Postgres parses and plans it once
 * per connection (from its sixth run, with a generic plan) instead of on every call, 0.3–0.5 ms less a statement on
 * this machine (docs/performance.md). The name is the text's hash, so no two texts share one (pg refuses that).
 * For the hot path's statements only, whose text is fixed (every value a binding) and whose result names its columns:
 * a connection that prepared a `*` over a table fails once a migration changes that table's columns.
 */
export function preparedAs(text: string): { name: string } {
  let name = names.get(text);
  if (name === undefined) {
    name = `q_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
    // The hot path has a handful of texts; a cap keeps a misuse from growing this without bound.
    if (names.size < MAX_TEXTS) names.set(text, name);
  }
  return { name };
}

/** Each text's name, hashed once per process rather than on every call. */
const names = new Map<string, string>();
const MAX_TEXTS = 64;
