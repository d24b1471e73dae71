import type { Knex } from 'knex';
import { z } from 'zod';
import { countTokens } from '../domain/tokens';

export interface GroundingResult {
  fired: boolean;
  /** Which source answered: `postgres_fts` (operator-loaded documents) or `searxng`. */
  source: string | null;
  snippets: string[];
  /** The snippets' size in tokens (the workflow has no tokenizer; Form A's ceiling checks need it). */
  tokens: number;
}

const MAX_SNIPPETS = 3;
const SNIPPET_CHARS = 600;

const SearxReply = z.object({
  results: z.array(z.object({ title: z.string().optional(), content: z.string().optional(), url: z.string().optional() })),
});

/** A SearXNG instance's JSON search endpoint (`QUORUM_SEARXNG_URL`). */
async function searxng(baseUrl: string, query: string): Promise<string[]> {
  const url = new URL('/search', baseUrl);
  url.searchParams.set('q', query);
  url.searchParams.set('format', 'json');
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`SearXNG answered ${res.status}`);
  const body = SearxReply.parse(await res.json());
  return body.results.slice(0, MAX_SNIPPETS).map((r) => `${r.title ?? ''}: ${r.content ?? ''} (${r.url ?? ''})`.slice(0, SNIPPET_CHARS));
}

/**
 * Postgres full-text search over documents loaded with `quorum docs add`: works offline. Any of the question's
 * terms may match (a question rarely shares every word with its answer); the best-ranked documents win.
 */
async function documents(db: Knex, query: string): Promise<string[]> {
  const result = await db.raw<{ rows: { title: string; excerpt: string }[] }>(
    `select title, ts_headline('english', body, s.q, 'MaxWords=60, MinWords=20') as excerpt
       from grounding_documents,
            lateral (select cast(replace(cast(plainto_tsquery('english', ?) as text), '&', '|') as tsquery) as q) s
      where tsv @@ s.q
      order by ts_rank(tsv, s.q) desc
      limit ?`,
    [query, MAX_SNIPPETS],
  );
  const rows = result.rows;
  return rows.map((r) => `${r.title}: ${r.excerpt}`.slice(0, SNIPPET_CHARS));
}

export async function searchGrounding(db: Knex, query: string, searxngUrl: string | undefined): Promise<GroundingResult> {
  const source = searxngUrl ? 'searxng' : 'postgres_fts';
  const snippets = searxngUrl ? await searxng(searxngUrl, query) : await documents(db, query);
  return { fired: true, source, snippets, tokens: snippets.reduce((n, t) => n + countTokens(t), 0) };
}
