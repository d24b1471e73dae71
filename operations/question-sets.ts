import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { saveQuestionSet } from '../db/repositories/runs';
import type { Question } from '../domain/questions/types';
import type { Principal } from './principal';

/** The operator imports an organisation's question set, which its runs then draw from; the set's id. */
export async function importQuestionSet(
  deps: { db: Knex },
  _principal: Principal & { via: 'operator' },
  input: { orgId: string; name: string; questions: Question[] },
): Promise<string> {
  const id = `qs_${randomBytes(9)
    .toString('base64url')
    .replace(/[^A-Za-z0-9]/g, 'x')}`;
  await saveQuestionSet(deps.db, { id, orgId: input.orgId, name: input.name, questions: input.questions });
  return id;
}
