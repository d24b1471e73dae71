import type { Knex } from 'knex';
import { QuorumError } from '../../domain/errors';
import type { Form } from '../../domain/form';
import { ModeConfigSchema, modeConfigHash, SYSTEM_MODES, TICKER_RE, type ModeConfig, type ModeRecord } from '../../domain/modes';

type Conn = Knex | Knex.Transaction;

/** A `modes` row joined with one of its versions' configuration. */
export interface ModeRow {
  id: string;
  ticker: string;
  org_id: string | null;
  name: string;
  description: string | null;
  use_when: string;
  published: boolean;
  current_version: number;
  config: unknown;
  config_hash: string;
}

/** The fields every view of a mode row shares. */
export function modeIdentity(
  row: Pick<ModeRow, 'id' | 'ticker' | 'org_id' | 'name' | 'description' | 'use_when' | 'published'>,
): Pick<ModeRecord, 'id' | 'ticker' | 'orgId' | 'name' | 'description' | 'useWhen' | 'published'> {
  return {
    id: row.id,
    ticker: row.ticker,
    orgId: row.org_id,
    name: row.name,
    description: row.description,
    useWhen: row.use_when,
    published: row.published,
  };
}

function toRecord(row: ModeRow): ModeRecord {
  return {
    ...modeIdentity(row),
    version: row.current_version,
    configHash: row.config_hash,
    config: ModeConfigSchema.parse(row.config),
  };
}

/** Modes with their current version's configuration; `config` is null on a mode never released (version 0). */
export function withCurrentVersion(db: Conn): Knex.QueryBuilder {
  return db('modes as m')
    .leftJoin('mode_versions as v', function () {
      this.on('v.mode_id', '=', 'm.id').andOn('v.version', '=', 'm.current_version');
    })
    .select('m.*', 'v.config', 'v.config_hash');
}

/** A row of `withCallableVersions`: the current release, and the listed version as `listed_*`. */
interface CallableRow extends ModeRow {
  created_at: Date;
  listing_state: ListingState | null;
  listing_version: number | null;
  listed_config: unknown;
  listed_config_hash: string | null;
}

/** Modes with their current version's configuration and their listed version's (null when not listed). */
function withCallableVersions(db: Conn): Knex.QueryBuilder {
  return withCurrentVersion(db)
    .leftJoin('mode_versions as lv', function () {
      this.on('lv.mode_id', '=', 'm.id').andOn('lv.version', '=', 'm.listing_version');
    })
    .select('lv.config as listed_config', 'lv.config_hash as listed_config_hash');
}

/**
 * The version of a mode an organisation calls (DESIGN §10): its own organisation (the owner and team) and everyone
 * for a platform mode get the latest release; another organisation gets the version that was listed, until the owner
 * lists a newer one. Releasing a version never changes what the marketplace serves.
 */
function callableBy(row: CallableRow, orgId: string): ModeRecord {
  if (row.org_id === null || row.org_id === orgId || row.listing_version === null || row.listed_config === null) return toRecord(row);
  return toRecord({
    ...row,
    current_version: row.listing_version,
    config: row.listed_config,
    config_hash: row.listed_config_hash as string,
  });
}

/**
 * Saves a mode's configuration: a new mode gets version 1; a changed configuration gets the next version
 * (and so a new `configHash`); an unchanged one is left alone. Returns the current version.
 */
export async function upsertMode(db: Knex, mode: Omit<ModeRecord, 'version' | 'configHash'>): Promise<ModeRecord> {
  // The `:LAB` suffix names a mode's lab version at call time; it is never part of the stored ticker.
  if (!TICKER_RE.test(mode.ticker) || mode.ticker.endsWith(':LAB')) {
    throw new QuorumError('invalid_request', `A ticker is COMPANY:MODE with a four-letter mode part, not ${JSON.stringify(mode.ticker)}.`, {
      param: 'ticker',
    });
  }
  const config: ModeConfig = ModeConfigSchema.parse(mode.config);
  const hash = modeConfigHash(config);
  return db.transaction(async (trx) => {
    const existing = (await withCurrentVersion(trx).where('m.id', mode.id).forUpdate('m').first()) as ModeRow | undefined;
    const fields = {
      ticker: mode.ticker,
      org_id: mode.orgId,
      name: mode.name,
      description: mode.description,
      use_when: mode.useWhen,
      published: mode.published,
    };
    if (!existing) {
      await trx('modes').insert({ id: mode.id, ...fields, current_version: 1 });
      await trx('mode_versions').insert({ mode_id: mode.id, version: 1, config, config_hash: hash });
    } else if (existing.config_hash !== hash) {
      const version = existing.current_version + 1;
      await trx('mode_versions').insert({ mode_id: mode.id, version, config, config_hash: hash });
      await trx('modes')
        .where({ id: mode.id })
        .update({ ...fields, current_version: version });
    } else {
      await trx('modes').where({ id: mode.id }).update(fields);
    }
    return toRecord((await withCurrentVersion(trx).where('m.id', mode.id).first()) as ModeRow);
  });
}

/** Brings the system modes to their definitions in `domain/modes.ts`; run at every start. */
export async function seedSystemModes(db: Knex): Promise<ModeRecord[]> {
  const out: ModeRecord[] = [];
  for (const seed of SYSTEM_MODES) out.push(await upsertMode(db, { ...seed, orgId: null, published: true }));
  return out;
}

/**
 * Entitled to the organisation: published system modes, its own released modes, and modes listed in the marketplace
 * (another organisation's at its listed version).
 */
export async function listModesForOrg(db: Conn, orgId: string): Promise<ListedMode[]> {
  const rows = (await withCallableVersions(db)
    .where('m.published', true)
    .andWhere((q) => q.whereNull('m.org_id').orWhere('m.org_id', orgId).orWhere('m.listing_state', 'listed'))
    .orderBy('m.id')) as CallableRow[];
  return rows.map((row) => ({ ...callableBy(row, orgId), createdAt: row.created_at }));
}

/** An entitled mode with when its id (and ticker) was first saved: `modes.created_at`, never moved by a new version. */
export type ListedMode = ModeRecord & { createdAt: Date };

interface LabRow extends CallableRow {
  draft_config: unknown;
  draft_config_hash: string | null;
}

/**
 * The mode a request names: Form A by id, Form B by ticker. A `:LAB` ticker is the lab version (the draft when
 * there is one, else the current release), open to the owning organisation and those it invited; anyone else gets
 * `lab_not_available`. The owning organisation calls the current release. Another organisation's mode is entitled
 * when listed, at its listed version (not a later release); once delisted or rejected Form B says
 * `mode_not_permitted`. A mode never released is returned unpublished to its owner only (the caller answers
 * `mode_not_published`). Undefined when the caller cannot see such a mode.
 */
export async function findMode(db: Conn, q: { orgId: string; form: Form; model: string }): Promise<ModeRecord | undefined> {
  const lab = namesLab(q.form, q.model);
  const key = lab ? q.model.slice(0, -':LAB'.length) : q.model;
  const row = (await withCallableVersions(db)
    .where(q.form === 'A' ? 'm.id' : 'm.ticker', key)
    .first()) as LabRow | undefined;
  if (!row) return undefined;
  const own = row.org_id === q.orgId;
  // The draft runs as version 0; it is published only as a lab version.
  const draft = (published: boolean): ModeRecord =>
    toRecord({ ...row, current_version: 0, config: row.draft_config, config_hash: row.draft_config_hash as string, published });
  if (lab) {
    // Invitations are read only for a lab call of another organisation's mode, never on an ordinary call.
    const invited = !own && (await db('mode_lab_invites').where({ mode_id: row.id, org_id: q.orgId }).first('mode_id')) !== undefined;
    if (!own && !invited)
      throw new QuorumError(
        'lab_not_available',
        `The lab version of \`${key}\` is open to its author's organisation and those it invited.`,
        {
          param: 'model',
        },
      );
    if (row.draft_config !== null) return draft(true);
    return row.config === null ? undefined : toRecord(row);
  }
  if (row.config === null) return own && row.draft_config !== null ? draft(false) : undefined;
  if (own || row.org_id === null) return !row.published && !own ? undefined : toRecord(row);
  if (row.listing_state === 'listed' && row.published) return callableBy(row, q.orgId);
  if (row.listing_state !== null && q.form === 'B')
    throw new QuorumError('mode_not_permitted', `\`${key}\` is no longer offered in the marketplace.`, { param: 'model' });
  return undefined;
}

/** Whether `model` names a mode's lab version (Form B's `:LAB` ticker). */
export function namesLab(form: Form, model: string): boolean {
  return form === 'B' && model.endsWith(':LAB');
}

export type ListingState = 'listed' | 'rejected' | 'delisted';

/** Whether the mode is listed in the marketplace (Form B certifies listed modes only). */
export async function isListed(db: Conn, modeId: string): Promise<boolean> {
  const row = (await db('modes').where({ id: modeId }).first('listing_state')) as { listing_state: ListingState | null } | undefined;
  return row?.listing_state === 'listed';
}

/** Lists (or unlists, with null) the mode's current version at once: seeds and tests; the builder goes through review. */
export async function setListingState(db: Conn, modeId: string, state: ListingState | null): Promise<void> {
  await db('modes')
    .where({ id: modeId })
    .update({ listing_state: state, listing_version: state === null ? null : db.raw('current_version') });
}
