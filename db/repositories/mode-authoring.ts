import type { Knex } from 'knex';
import { z } from 'zod';
import { QuorumError } from '../../domain/errors';
import type { CompiledMode, PriceFloor } from '../../domain/mode-spec';
import { modeConfigHash, ModeConfigSchema, type ModeConfig, type ModeRecord } from '../../domain/modes';
import { modeIdentity, withCurrentVersion, type ListingState, type ModeRow } from './modes';
import type { DbOrTrx } from './shared';

/**
 * The mode builder's writes (spec 02): drafts, releases, lab invitations, listings and the price floor. A save
 * writes the draft and bumps `draft_revision`; a release validates a draft it read at some revision and commits
 * only if the row still holds that revision (row lock + compare), so a save during a release, or a second release,
 * is answered `draft_changed` and never lost. Released versions are inserted, never updated.
 */

export interface AuthoredMode extends Pick<ModeRecord, 'id' | 'ticker' | 'orgId' | 'name' | 'description' | 'useWhen' | 'published'> {
  currentVersion: number;
  /** The current release's configuration and hash; null before the first release. */
  config: ModeConfig | null;
  configHash: string | null;
  draftSpec: unknown;
  draftConfigHash: string | null;
  draftRevision: number;
  draftSavedAt: Date | null;
  listingState: ListingState | null;
  listingVersion: number | null;
  listingRevision: number;
}

/** The row with its current version left-joined: `config` and `config_hash` are null before the first release. */
interface Row extends Omit<ModeRow, 'config_hash'> {
  config_hash: string | null;
  draft_spec: unknown;
  draft_config_hash: string | null;
  draft_revision: number;
  draft_saved_at: Date | null;
  listing_state: ListingState | null;
  listing_version: number | null;
  listing_revision: number;
}

function toAuthored(row: Row): AuthoredMode {
  return {
    ...modeIdentity(row),
    currentVersion: row.current_version,
    config: row.config === null ? null : ModeConfigSchema.parse(row.config),
    configHash: row.config_hash,
    draftSpec: row.draft_spec,
    draftConfigHash: row.draft_config_hash,
    draftRevision: row.draft_revision,
    draftSavedAt: row.draft_saved_at,
    listingState: row.listing_state,
    listingVersion: row.listing_version,
    listingRevision: row.listing_revision,
  };
}

/** A mode by id or ticker (`mode_id` of the MCP tools accepts either). */
export async function readAuthoredMode(db: DbOrTrx, idOrTicker: string): Promise<AuthoredMode | undefined> {
  const row = (await withCurrentVersion(db).where('m.id', idOrTicker).orWhere('m.ticker', idOrTicker).first()) as Row | undefined;
  return row && toAuthored(row);
}

export async function listAuthoredModes(db: DbOrTrx, orgId: string): Promise<AuthoredMode[]> {
  return ((await withCurrentVersion(db).where('m.org_id', orgId).orderBy('m.created_at')) as Row[]).map(toAuthored);
}

/** The organisation's other mode (not `exceptId`) by this name, compared without case, and whether it was ever released. */
export async function orgModeNamed(
  db: DbOrTrx,
  orgId: string,
  name: string,
  exceptId?: string,
): Promise<{ id: string; released: boolean } | undefined> {
  const q = db('modes').where({ org_id: orgId }).whereRaw('lower(name) = lower(?)', [name]);
  if (exceptId) q.whereNot({ id: exceptId });
  const row = (await q.first('id', 'current_version')) as { id: string; current_version: number } | undefined;
  return row && { id: row.id, released: row.current_version > 0 };
}

/** The organisation's ticker company part, if its first mode assigned one. */
export async function assignedTickerPrefix(db: DbOrTrx, orgId: string): Promise<string | null> {
  const row = (await db('organisations').where({ id: orgId }).first('ticker_prefix')) as { ticker_prefix: string | null } | undefined;
  return row?.ticker_prefix ?? null;
}

/** The organisation's ticker company part, assigned from its name at its first mode and never changed. */
export async function tickerPrefix(db: Knex, orgId: string): Promise<string> {
  const org = (await db('organisations').where({ id: orgId }).first('name', 'ticker_prefix')) as
    { name: string; ticker_prefix: string | null } | undefined;
  if (!org) throw new QuorumError('org_required', `No organisation ${orgId}.`);
  if (org.ticker_prefix) return org.ticker_prefix;
  const base = (org.name.toUpperCase().replace(/[^A-Z0-9]/g, '') || 'ORG').slice(0, 6).padEnd(2, 'X');
  // QRM is the platform's own; the prefix is unique, so a race or a namesake moves on to BASE2, BASE3…
  for (let n = 1; n < 1000; n++) {
    const candidate = n === 1 ? base : `${base.slice(0, 8 - String(n).length)}${n}`;
    if (candidate === 'QRM') continue;
    const updated = await db('organisations')
      .where({ id: orgId })
      .whereNull('ticker_prefix')
      .whereNotExists(db('organisations').where({ ticker_prefix: candidate }).select(db.raw('1')))
      .update({ ticker_prefix: candidate });
    if (updated === 1) return candidate;
    const now = (await db('organisations').where({ id: orgId }).first('ticker_prefix')) as { ticker_prefix: string | null };
    if (now.ticker_prefix) return now.ticker_prefix;
  }
  throw new Error(`no free ticker prefix for ${orgId}`);
}

/** The four-letter mode parts used under a ticker prefix. */
export async function tickersUnder(db: DbOrTrx, prefix: string): Promise<Map<string, string>> {
  const rows = (await db('modes').where('ticker', 'like', `${prefix}:%`).select('id', 'ticker')) as { id: string; ticker: string }[];
  return new Map(rows.map((r) => [r.ticker.slice(prefix.length + 1), r.id]));
}

/** Whether the organisation still has a live owner key to own a new mode (`org_owner_missing` otherwise). */
/** An owner is a person who owns the organisation, or (for organisations an operator made) its live owner key. */
export async function orgHasOwner(db: DbOrTrx, orgId: string): Promise<boolean> {
  const [person, key] = await Promise.all([
    db('memberships').where({ org_id: orgId, role: 'owner' }).first('person_id'),
    db('api_keys').where({ org_id: orgId, is_owner: true }).whereNull('revoked_at').first('id'),
  ]);
  return person !== undefined || key !== undefined;
}

/** A new mode, draft only: version 0, unpublished, callable as its lab version. */
export async function createDraftMode(
  db: DbOrTrx,
  input: { id: string; ticker: string; orgId: string | null; spec: unknown; mode: CompiledMode },
): Promise<AuthoredMode> {
  await db('modes').insert({
    id: input.id,
    ticker: input.ticker,
    org_id: input.orgId,
    name: input.mode.name,
    description: input.mode.description,
    use_when: input.mode.useWhen,
    published: false,
    current_version: 0,
    ...draftFields(input.spec, input.mode.config),
    draft_revision: 1,
  });
  return (await readAuthoredMode(db, input.id)) as AuthoredMode;
}

function draftFields(spec: unknown, config: ModeConfig): Record<string, unknown> {
  return {
    draft_spec: JSON.stringify(spec),
    draft_config: JSON.stringify(config),
    draft_config_hash: modeConfigHash(config),
    draft_saved_at: new Date(),
  };
}

/** Replaces the draft; the revision moves on, so a release that read the old draft will not commit. */
export async function saveDraft(db: DbOrTrx, modeId: string, spec: unknown, config: ModeConfig): Promise<AuthoredMode> {
  await db('modes')
    .where({ id: modeId })
    .update({ ...draftFields(spec, config), draft_revision: db.raw('draft_revision + 1') });
  return (await readAuthoredMode(db, modeId)) as AuthoredMode;
}

/**
 * Makes the draft read at `revision` the next version. `draft_changed` when the draft moved on (a save, or another
 * release, got there first); the version, the mode's texts and ticker, and the cleared draft commit together.
 */
export async function releaseDraft(
  db: Knex,
  input: { modeId: string; revision: number; spec: unknown; mode: CompiledMode; ticker: string },
): Promise<AuthoredMode> {
  return db.transaction(async (trx) => {
    const row = (await trx('modes').where({ id: input.modeId }).forUpdate().first('current_version', 'draft_revision', 'draft_spec')) as
      { current_version: number; draft_revision: number; draft_spec: unknown } | undefined;
    if (!row) throw new QuorumError('mode_not_found', `No mode ${input.modeId}.`);
    if (row.draft_revision !== input.revision || row.draft_spec === null)
      throw new QuorumError('draft_changed', 'The draft changed while it was being released; release again.');
    const version = row.current_version + 1;
    const config = input.mode.config;
    await trx('mode_versions').insert({
      mode_id: input.modeId,
      version,
      config: JSON.stringify(config),
      config_hash: modeConfigHash(config),
      spec: JSON.stringify(input.spec),
    });
    await trx('modes')
      .where({ id: input.modeId })
      .update({
        current_version: version,
        published: true,
        ticker: input.ticker,
        name: input.mode.name,
        description: input.mode.description,
        use_when: input.mode.useWhen,
        draft_spec: null,
        draft_config: null,
        draft_config_hash: null,
        draft_saved_at: null,
        draft_revision: trx.raw('draft_revision + 1'),
      });
    return (await readAuthoredMode(trx, input.modeId)) as AuthoredMode;
  });
}

export async function inviteToLab(db: DbOrTrx, modeId: string, orgId: string): Promise<void> {
  await db('mode_lab_invites').insert({ mode_id: modeId, org_id: orgId }).onConflict(['mode_id', 'org_id']).ignore();
}

export async function labInvites(db: DbOrTrx, modeId: string): Promise<string[]> {
  return ((await db('mode_lab_invites').where({ mode_id: modeId }).orderBy('created_at').select('org_id')) as { org_id: string }[]).map(
    (r) => r.org_id,
  );
}

/** A mode's released versions, newest first, with the spec each was compiled from (null for modes seeded from code). */
export async function modeVersions(
  db: DbOrTrx,
  modeId: string,
): Promise<{ version: number; configHash: string; spec: unknown; releasedAt: Date }[]> {
  const rows = (await db('mode_versions')
    .where({ mode_id: modeId })
    .orderBy('version', 'desc')
    .select('version', 'config_hash', 'spec', 'created_at')) as { version: number; config_hash: string; spec: unknown; created_at: Date }[];
  return rows.map((r) => ({ version: r.version, configHash: r.config_hash, spec: r.spec, releasedAt: r.created_at }));
}

/** Writes a listing state if the listing is still at `revision` (`listing_changed` otherwise). */
export async function writeListing(
  db: DbOrTrx,
  input: { modeId: string; revision: number; state: ListingState | null; version: number | null; note?: string | null },
): Promise<void> {
  const updated = await db('modes')
    .where({ id: input.modeId, listing_revision: input.revision })
    .update({
      listing_state: input.state,
      listing_version: input.version,
      listing_note: input.note ?? null,
      listing_revision: db.raw('listing_revision + 1'),
    });
  if (updated === 0) throw new QuorumError('listing_changed', 'The listing changed while it was written; list again.');
}

/**
 * The latest version of the mode a completed live certification certified, if any. A test key's certification ran
 * on `sim` engines and certifies nothing (DESIGN §10).
 */
export async function certifiedVersion(db: DbOrTrx, modeId: string): Promise<number | null> {
  const row = (await db('runs')
    .where({ mode_id: modeId, kind: 'certification', state: 'completed', key_mode: 'live' })
    .whereRaw("summary->>'verdict' = 'certified'")
    .max('mode_version as version')
    .first()) as { version: number | null } | undefined;
  return row?.version ?? null;
}

const PRICE_FLOOR_KEY = 'price_floor';
const PriceFloorSchema = z.object({ perMtokUsd: z.number().nonnegative(), surchargeUsd: z.number().nonnegative() });

/** The price floor an operator set, or `fallback` (configuration) when none was; `pricing_unavailable` when unreadable. */
export async function readPriceFloor(db: DbOrTrx, fallback: PriceFloor): Promise<PriceFloor> {
  let row: { value: unknown } | undefined;
  try {
    row = (await db('platform_settings').where({ key: PRICE_FLOOR_KEY }).first('value')) as { value: unknown } | undefined;
  } catch {
    throw new QuorumError('pricing_unavailable', 'The price floor could not be read; nothing was saved or released. Retry.');
  }
  if (!row) return fallback;
  const parsed = PriceFloorSchema.safeParse(row.value);
  if (!parsed.success) throw new QuorumError('pricing_unavailable', 'The stored price floor is unreadable; nothing was saved or released.');
  return parsed.data;
}

export async function writePriceFloor(db: DbOrTrx, floor: PriceFloor): Promise<void> {
  await db('platform_settings')
    .insert({ key: PRICE_FLOOR_KEY, value: JSON.stringify(PriceFloorSchema.parse(floor)), updated_at: new Date() })
    .onConflict('key')
    .merge();
}
