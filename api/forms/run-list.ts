import type { RunPage } from '../../operations/run-list';
import type { JsonObject } from './json';
import type { RunSerialiser } from './runs';

/**
 * `GET /v1/runs` and MCP `list_runs` (issue 28 item 1), in the deployment's Form: each entry is the `batch` its poll
 * returns, and a certification's entry carries the poll's `certification` beside the batch's fields.
 */
export function runListBody(runs: Pick<RunSerialiser, 'poll'>, page: RunPage): JsonObject {
  return {
    object: 'list',
    data: page.views.map((view) => {
      const { batch, certification } = runs.poll(view) as { batch: JsonObject; certification?: JsonObject | null };
      return view.run.kind === 'certification' ? { ...batch, certification: certification ?? null } : batch;
    }),
    // OpenAI's list shape, as the poll's `include=questions` pages: the next page is `after=<last_id>`.
    first_id: page.views[0]?.run.id ?? null,
    last_id: page.views.at(-1)?.run.id ?? null,
    has_more: page.hasMore,
  };
}
