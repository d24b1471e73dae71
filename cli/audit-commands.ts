import { z } from 'zod';
import { INVARIANTS, violationLine, type Invariant } from '../domain/audit';
import { audit } from '../operations/audit';
import { command, list, type Command } from './command';

/**
 * `quorum audit` (issue 26 item 18, DESIGN §7): checks the money invariants over the whole database and Temporal and
 * prints each violation with the ids to look at; exit 1 when there is any. What each invariant means is in
 * docs/operations.md.
 */

const auditCommand = command({
  name: 'audit',
  usage: '[--org ORG_ID[,ORG_ID…]] [--database-only]',
  options: { org: { type: 'string' }, 'database-only': { type: 'boolean' } },
  input: z.object({
    org: list(z.string().min(1, 'must not contain an empty organisation id')).optional(),
    'database-only': z.boolean().optional(),
  }),
  async run({ org, 'database-only': databaseOnly }, { resources }) {
    const client = databaseOnly ? undefined : await resources.temporal();
    const violations = await audit(resources.db, client, { orgIds: org });
    // An audit that could not ask Temporal has not checked the workflows: it fails unless that was asked for.
    const unchecked = !databaseOnly && client === undefined;
    const byInvariant = new Map<Invariant, number>();
    for (const v of violations) byInvariant.set(v.invariant, (byInvariant.get(v.invariant) ?? 0) + 1);
    const scope = org ? `organisations ${org.join(', ')}` : 'every organisation';
    const temporal = databaseOnly ? 'database only' : unchecked ? 'Temporal not reachable: workflows NOT checked' : 'database and Temporal';
    const summary =
      violations.length === 0
        ? `No violations: ${Object.keys(INVARIANTS).length} invariants hold over ${scope} (${temporal}).`
        : `${violations.length} violation(s) over ${scope} (${temporal}): ${[...byInvariant].map(([k, n]) => `${k} ${n}`).join(', ')}.`;
    return {
      json: {
        ok: violations.length === 0 && !unchecked,
        temporal_checked: client !== undefined,
        violations: violations.map((v) => ({ invariant: v.invariant, ids: v.ids, detail: v.detail })),
      },
      text: [...violations.map(violationLine), summary].join('\n'),
      exitCode: violations.length > 0 || unchecked ? 1 : 0,
    };
  },
});

export const auditCommands: readonly Command[] = [auditCommand];
