import type { DbOrTrx } from './shared';

/** Adds an operator's document to the grounding corpus (searched with Postgres full-text search). */
export async function addDocument(db: DbOrTrx, doc: { title: string; body: string }): Promise<string> {
  const [row] = (await db('grounding_documents').insert({ title: doc.title, body: doc.body }).returning('id')) as { id: bigint }[];
  return row.id.toString();
}
