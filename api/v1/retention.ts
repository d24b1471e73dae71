import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { QuorumError } from '../../domain/errors';
import { deleteTranscriptOf, exportOrganisation } from '../../operations/retention';
import type { RouteDeps } from '../http/context';
import { authOf } from '../http/gate';

/** Issue 41 item 5: a call's transcript deleted, and the organisation's export. Both Forms answer alike. */

/** DELETE /v1/receipts/{request_id}/transcript */
export function deleteTranscriptRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const requestId = String((ctx.params as Record<string, string | undefined>).request_id ?? '');
    const deleted = await deleteTranscriptOf(deps, authOf(ctx), requestId);
    ctx.body = { request_id: deleted.requestId, object: 'transcript', deleted: true };
  };
}

/**
 * GET /v1/organization/export: JSONL, streamed. Everything the organisation owns, so only its owner's key (issued
 * with the organisation) or its admin key may read it; a connected app may not.
 */
export function exportRoute(deps: RouteDeps) {
  return (ctx: Context): void => {
    const auth = authOf(ctx);
    if (auth.app || !(auth.isOwner || auth.keyKind === 'admin'))
      throw new QuorumError('forbidden', "Only the organisation owner's key or its admin key exports the organisation.");
    ctx.type = 'application/jsonl; charset=utf-8';
    ctx.set('Content-Disposition', `attachment; filename="${auth.orgId}.jsonl"`);
    ctx.body = Readable.from(exportOrganisation(deps, auth));
  };
}
