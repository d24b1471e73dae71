import type { OperationDeps, StoreDeps } from '../deps';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { recordActivity } from '../activity';
import type { Principal } from '../principal';
import { QuorumError } from '../../domain/errors';
import { suggestTicker, validateMode, type CompiledMode, type PriceFloor, type ValidationContext } from '../../domain/mode-spec';
import type { Refusal } from '../../domain/mode-validation-codes';
import { TIER_RANK, TIERS, tiersOf, type Tier } from '../../domain/modes';
import { seatChain } from '../../domain/seat-assignment';
import {
  assignedTickerPrefix,
  certifiedVersion,
  createDraftMode,
  inviteToLab,
  labInvites,
  listAuthoredModes,
  modeVersions,
  orgModeNamed,
  orgHasOwner,
  readAuthoredMode,
  readPriceFloor,
  releaseDraft,
  saveDraft,
  tickerPrefix,
  tickersUnder,
  writeListing,
  writePriceFloor,
  type AuthoredMode,
} from '../../db/repositories/mode-authoring';
import { organisationExists } from '../../db/repositories/organisations';
import { ownProviderFamilies } from '../../db/repositories/provider-credentials';
import { callSeatingContext, simStandInsAllowed } from '../../engines/seating-context';
import type { Config } from '../../infra/config';

/**
 * The mode builder's one core (spec 02 `list_engines`, `validate_mode`, `save_mode`, `list_mode`; the operator CLI;
 * the web builder in the console): every edge calls these functions with its `Principal` and gets the same checks, codes and
 * writes. Nothing here knows which edge called.
 */

/** What authoring works with of the operations' dependencies (the CLI has them without Temporal). */
export type AuthoringDeps = Pick<OperationDeps, 'db' | 'form' | 'engines' | 'config'>;

/**
 * The organisation a principal authors for: a key's, a person's chosen one, or the one the operator acts as (null:
 * a platform mode, which an operator alone authors).
 */
export function authorOrg(author: Principal): string | null {
  return author.via === 'operator' ? (author.orgId ?? null) : author.orgId;
}

/** Records a release or listing of an organisation's mode in the activity log (a platform mode has no organisation). */
async function recordModeChange(
  trx: Knex.Transaction,
  author: Principal,
  kind: 'mode.released' | 'mode.listed',
  m: AuthoredMode,
): Promise<void> {
  if (m.orgId === null) return;
  await recordActivity(trx, m.orgId, author, { kind, subject: m.id, detail: { ticker: m.ticker, version: m.currentVersion } });
}

export type PriceFloorSettings = Pick<Config, 'QUORUM_PRICE_FLOOR_PER_MTOK_USD' | 'QUORUM_PRICE_FLOOR_SURCHARGE_USD'>;

/** The price floor when no operator set one: the cheapest the price slider goes. */
export function configuredPriceFloor(config: PriceFloorSettings): PriceFloor {
  return { perMtokUsd: config.QUORUM_PRICE_FLOOR_PER_MTOK_USD ?? 0.05, surchargeUsd: config.QUORUM_PRICE_FLOOR_SURCHARGE_USD ?? 0.0005 };
}

/** What the edges show of a mode: its names, where its draft and release stand, and its listing. */
export interface ModeView {
  mode_id: string;
  ticker: string;
  /** What `model` takes in this deployment's Form. */
  model: string;
  lab_model: string | null;
  name: string;
  state: 'draft' | 'released';
  version: number;
  mode_config_hash: string | null;
  draft: { revision: number; config_hash: string; saved_at: string | null } | null;
  listing: { state: string; version: number | null } | null;
}

function view(deps: AuthoringDeps, m: AuthoredMode): ModeView {
  return {
    mode_id: m.id,
    ticker: m.ticker,
    model: deps.form === 'A' ? m.id : m.ticker,
    lab_model: deps.form === 'B' ? `${m.ticker}:LAB` : null,
    name: m.name,
    state: m.currentVersion === 0 ? 'draft' : 'released',
    version: m.currentVersion,
    mode_config_hash: m.configHash,
    draft: m.draftConfigHash
      ? { revision: m.draftRevision, config_hash: m.draftConfigHash, saved_at: m.draftSavedAt?.toISOString() ?? null }
      : null,
    listing: m.listingState ? { state: m.listingState, version: m.listingVersion } : null,
  };
}

/** A test key never changes modes; a key limited to named modes creates none and changes only those. */
function mayAuthor(author: Principal, mode?: AuthoredMode): void {
  if (author.via !== 'key') return;
  if (author.keyKind === 'test') throw new QuorumError('test_key_not_allowed', 'A test key cannot change modes; use a live key.');
  if (author.allowedModes === null) return;
  if (!mode) throw new QuorumError('mode_not_allowed', 'This key is limited to named modes, so it cannot create one.');
  if (!author.allowedModes.includes(mode.id) && !author.allowedModes.includes(mode.ticker))
    throw new QuorumError('mode_not_allowed', `This key is limited to other modes than ${mode.ticker}.`);
}

/**
 * The mode `modeId` names, if the author may change it. Another organisation's private mode is `mode_not_found`
 * (never revealed); one the author can see but not change (a platform mode, a listed mode) is `forbidden`.
 */
async function modeToChange(deps: AuthoringDeps, author: Principal, modeId: string): Promise<AuthoredMode> {
  const mode = await readAuthoredMode(deps.db, modeId);
  const notFound = new QuorumError('mode_not_found', `No mode ${JSON.stringify(modeId)} that this organisation has.`, { param: 'mode_id' });
  if (!mode) throw notFound;
  const own = mode.orgId === authorOrg(author) && (mode.orgId !== null || author.via === 'operator');
  if (!own) {
    const visible = mode.orgId === null || (mode.listingState === 'listed' && mode.published);
    if (!visible) throw notFound;
    throw new QuorumError('forbidden', `${mode.ticker} is not this organisation's to change.`, { param: 'mode_id' });
  }
  mayAuthor(author, mode);
  return mode;
}

export function requireOrg(author: Principal): void {
  if (author.via === 'operator') return;
  if (authorOrg(author) === null) throw new QuorumError('org_required', 'A mode belongs to an organisation; create or join one first.');
}

/** The validation context for this author, with `mode` the mode being saved (excluded from the ticker check). */
async function contextFor(deps: AuthoringDeps, author: Principal, mode?: AuthoredMode): Promise<ValidationContext> {
  const floor = await readPriceFloor(deps.db, configuredPriceFloor(deps.config));
  const orgId = authorOrg(author);
  const [own, taken] = await Promise.all([
    orgId ? ownProviderFamilies(deps.db, orgId) : Promise.resolve(new Set<string>()),
    // Read only: a check writes nothing, not even the prefix a first save assigns.
    (orgId ? assignedTickerPrefix(deps.db, orgId) : Promise.resolve('QRM')).then((p) =>
      p ? tickersUnder(deps.db, p) : new Map<string, string>(),
    ),
  ]);
  const standIns = simStandInsAllowed(deps.config);
  return {
    form: deps.form,
    find: (id) => deps.engines.find(id),
    canRun: (id) => {
      const engine = deps.engines.find(id);
      return engine !== undefined && (standIns || deps.engines.isAvailable(id) || own.has(engine.family));
    },
    floor,
    via: author.via,
    hasOrg: orgId !== null || author.via === 'operator',
    system: orgId === null && author.via === 'operator',
    storedSystemTiers: mode?.orgId === null && mode.config ? tiersOf(mode.config) : undefined,
    tickerTaken: (part) => {
      const holder = taken.get(part);
      return holder !== undefined && holder !== mode?.id;
    },
  };
}

/** `validate_mode`: every refusal a save would give, nothing written. */
export async function checkModeSpec(
  deps: AuthoringDeps,
  author: Principal,
  input: { spec: unknown; modeId?: string },
): Promise<{ valid: boolean; refusals: Refusal[] }> {
  // No org_required error here: a person without an organisation gets it as a refusal, with the spec's other refusals.
  const mode = input.modeId ? await modeToChange(deps, author, input.modeId) : undefined;
  const result = validateMode(input.spec, await contextFor(deps, author, mode));
  return { valid: result.ok, refusals: result.refusals };
}

function invalid(refusals: Refusal[]): QuorumError {
  const only = refusals.length === 1 ? refusals[0] : undefined;
  // A save refused for its ticker alone says so (409); the suggestion lives in validate_mode and in mode_invalid.
  if (only?.code === 'ticker_taken')
    return new QuorumError('ticker_taken', 'That ticker is in use by another of your modes.', { param: 'ticker' });
  return new QuorumError('mode_invalid', `The spec failed ${refusals.length} check(s); nothing was saved. See svc.refusals.`, {
    detail: { refusals },
  });
}

/** Any failure of the write itself (not a refusal) is `save_unavailable`: nothing was saved, retry. */
async function writing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof QuorumError) throw err;
    if ((err as { code?: string }).code === '23505' && /ticker/.test(String((err as { constraint?: string }).constraint)))
      throw new QuorumError('ticker_taken', 'That ticker was taken a moment ago.', { param: 'ticker' });
    throw new QuorumError('save_unavailable', 'Saving modes is unavailable right now; nothing was saved. Retry.');
  }
}

function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 40) || 'mode'
  );
}

/** Form A id and a Form B ticker for a new mode; a name-derived mode part when the spec (Form A) gives none. */
async function newIdentity(deps: AuthoringDeps, orgId: string | null, mode: CompiledMode): Promise<{ id: string; ticker: string }> {
  const prefix = orgId ? await tickerPrefix(deps.db, orgId) : 'QRM';
  const taken = await tickersUnder(deps.db, prefix);
  let part = mode.ticker;
  if (!part) {
    const fromName = (mode.name.toUpperCase().replace(/[^A-Z]/g, '') + 'XXXX').slice(0, 4);
    part = taken.has(fromName) ? (suggestTicker(fromName, (t) => taken.has(t)) ?? fromName) : fromName;
  }
  const base = orgId ? `${prefix.toLowerCase()}-${slug(mode.name)}` : `quorum-${slug(mode.name)}`;
  const clash = await deps.db('modes').where({ id: base }).first('id');
  return { id: clash ? `${base}-${randomBytes(3).toString('hex')}` : base, ticker: `${prefix}:${part}` };
}

export interface SaveInput {
  spec?: unknown;
  modeId?: string;
  release?: boolean;
}

/** `save_mode`: always writes a draft; `release: true` then releases it (or, with `mode_id` alone, the stored draft). */
export async function saveMode(deps: AuthoringDeps, author: Principal, input: SaveInput): Promise<ModeView> {
  requireOrg(author);
  if (input.spec === undefined) {
    if (!input.release)
      throw new QuorumError(
        'draft_required',
        'save_mode always saves a draft: pass a `spec`, or `mode_id` with `release: true` to release.',
      );
    if (!input.modeId) throw new QuorumError('invalid_request', 'Releasing needs the `mode_id` of the draft.', { param: 'mode_id' });
    return releaseMode(deps, author, input.modeId);
  }
  const existing = input.modeId ? await modeToChange(deps, author, input.modeId) : undefined;
  if (!existing) {
    mayAuthor(author);
    const orgId = authorOrg(author);
    if (orgId && author.via !== 'operator' && !(await orgHasOwner(deps.db, orgId)))
      throw new QuorumError('org_owner_missing', 'This organisation has no owner to own a new mode; ask an operator to restore one.');
  }
  const result = validateMode(input.spec, await writing(() => contextFor(deps, author, existing)));
  if (!result.ok) throw invalid(result.refusals);
  const compiled = result.mode;
  const orgId = existing ? existing.orgId : authorOrg(author);
  if (existing && existing.currentVersion > 0 && compiled.ticker && compiled.ticker !== existing.ticker.split(':')[1])
    throw new QuorumError('conflict', `${existing.ticker} was released under its ticker; a released mode keeps it.`, { param: 'ticker' });
  const namesake = orgId ? await orgModeNamed(deps.db, orgId, compiled.name, existing?.id) : undefined;
  if (namesake) {
    if (!existing && !namesake.released)
      throw new QuorumError(
        'draft_pending',
        `"${compiled.name}" is a draft that was never released (${namesake.id}): release it with mode_id and release: true, or save to it.`,
      );
    throw new QuorumError('name_taken', `This organisation already has a mode named "${compiled.name}".`, { param: 'name' });
  }
  const saved = await writing(async () => {
    if (existing) return saveDraft(deps.db, existing.id, input.spec, compiled.config);
    const identity = await newIdentity(deps, orgId, compiled);
    return createDraftMode(deps.db, { ...identity, orgId, spec: input.spec, mode: compiled });
  });
  return input.release ? releaseMode(deps, author, saved.id) : view(deps, saved);
}

/** Releases the stored draft: re-validated now, then the next version, unless the draft moved on meanwhile. */
export async function releaseMode(deps: AuthoringDeps, author: Principal, modeId: string): Promise<ModeView> {
  requireOrg(author);
  const mode = await modeToChange(deps, author, modeId);
  if (mode.draftSpec === null) {
    if (mode.draftConfigHash !== null)
      throw new QuorumError('draft_unvalidated', 'The draft has no saved spec to check; save it again, then release.');
    throw new QuorumError('no_draft', `${mode.ticker} has no draft to release; save one first.`);
  }
  let result;
  try {
    result = validateMode(mode.draftSpec, await contextFor(deps, author, mode));
  } catch (err) {
    if (err instanceof QuorumError) throw err;
    throw new QuorumError('validation_unavailable', 'The draft could not be checked; nothing was released. Retry.');
  }
  if (!result.ok) {
    const first = result.refusals[0];
    throw new QuorumError(first.code, `The draft no longer passes: ${first.message}`, {
      param: first.path || null,
      detail: { refusals: result.refusals },
    });
  }
  const part = result.mode.ticker ?? mode.ticker.split(':')[1];
  const ticker = `${mode.ticker.split(':')[0]}:${part}`;
  const released = await writing(() =>
    deps.db.transaction(async (trx) => {
      const done = await releaseDraft(trx, {
        modeId: mode.id,
        revision: mode.draftRevision,
        spec: mode.draftSpec,
        mode: result.mode,
        ticker,
      });
      await recordModeChange(trx, author, 'mode.released', done);
      return done;
    }),
  );
  return view(deps, released);
}

/** `list_mode`: publishes the current release to the marketplace. */
export async function listMode(deps: AuthoringDeps, author: Principal, modeId: string): Promise<ModeView> {
  requireOrg(author);
  const mode = await modeToChange(deps, author, modeId);
  if (mode.currentVersion === 0) throw new QuorumError('mode_not_released', `${mode.ticker} is only a draft: release it, then list it.`);
  if (mode.listingState === 'rejected') throw new QuorumError('listing_rejected', `The listing of ${mode.ticker} was rejected in review.`);
  if (mode.listingState === 'delisted') throw new QuorumError('listing_delisted', `The listing of ${mode.ticker} was taken down.`);
  let certified: number | null;
  try {
    certified = await certifiedVersion(deps.db, mode.id);
    // Spec 02: name_taken is the organisation's own namesake; another organisation may list a mode of the same name.
    if (mode.orgId !== null && (await orgModeNamed(deps.db, mode.orgId, mode.name, mode.id)))
      throw new QuorumError('name_taken', `This organisation already has a mode named "${mode.name}".`);
  } catch (err) {
    if (err instanceof QuorumError) throw err;
    throw new QuorumError('listing_read_failed', 'The current listing could not be read; retry.');
  }
  if (certified !== null && certified !== mode.currentVersion)
    throw new QuorumError(
      'published_version_uncertified',
      `${mode.ticker} is certified at version ${certified}; version ${mode.currentVersion} would be published without it. Certify it first.`,
    );
  await deps.db.transaction(async (trx) => {
    await writeListing(trx, { modeId: mode.id, revision: mode.listingRevision, state: 'listed', version: mode.currentVersion });
    await recordModeChange(trx, author, 'mode.listed', mode);
  });
  return view(deps, (await readAuthoredMode(deps.db, mode.id)) as AuthoredMode);
}

export type ReviewDecision = 'approve' | 'reject' | 'delist';

/** An operator's review of a listing (`quorum mode review`). */
export async function reviewListing(deps: AuthoringDeps, modeId: string, decision: ReviewDecision, note?: string): Promise<ModeView> {
  const mode = await readAuthoredMode(deps.db, modeId);
  if (!mode) throw new QuorumError('mode_not_found', `No mode ${modeId}.`);
  if (mode.currentVersion === 0) throw new QuorumError('mode_not_released', `${mode.ticker} is only a draft.`);
  const state = decision === 'approve' ? 'listed' : decision === 'reject' ? 'rejected' : 'delisted';
  await writeListing(deps.db, {
    modeId: mode.id,
    revision: mode.listingRevision,
    state,
    version: mode.listingVersion ?? mode.currentVersion,
    note,
  });
  return view(deps, (await readAuthoredMode(deps.db, mode.id)) as AuthoredMode);
}

/** Opens the mode's lab version to another organisation. */
export async function inviteOrganisation(
  deps: AuthoringDeps,
  author: Principal,
  modeId: string,
  guestOrgId: string,
): Promise<{ mode_id: string; invited: string }> {
  const mode = await modeToChange(deps, author, modeId);
  if (!(await organisationExists(deps.db, guestOrgId)))
    throw new QuorumError('not_found', `No organisation ${guestOrgId}.`, { param: 'org' });
  await inviteToLab(deps.db, mode.id, guestOrgId);
  return { mode_id: mode.id, invited: guestOrgId };
}

export async function listOrganisationModes(deps: AuthoringDeps, orgId: string): Promise<ModeView[]> {
  return (await listAuthoredModes(deps.db, orgId)).map((m) => view(deps, m));
}

/** A mode as its builder shows it: the view, the spec to edit, every release, and who may call its lab version. */
export interface ModeDetail extends ModeView {
  /** The draft's spec, else the current release's; null for a mode seeded from code (nothing to edit). */
  spec: unknown;
  versions: { version: number; mode_config_hash: string; released_at: string }[];
  lab_invited: string[];
}

export async function modeDetail(deps: AuthoringDeps, author: Principal, modeId: string): Promise<ModeDetail> {
  const mode = await modeToChange(deps, author, modeId);
  const [versions, invited] = await Promise.all([modeVersions(deps.db, mode.id), labInvites(deps.db, mode.id)]);
  const current = versions.find((v) => v.version === mode.currentVersion);
  return {
    ...view(deps, mode),
    spec: mode.draftSpec ?? current?.spec ?? null,
    versions: versions.map((v) => ({ version: v.version, mode_config_hash: v.configHash, released_at: v.releasedAt.toISOString() })),
    lab_invited: invited,
  };
}

/** One engine as `list_engines` shows it (a type alias, so the edges can hand it on as a JSON object). */
export type EngineListing = {
  id: string;
  family: string;
  maker: string;
  tier: Tier;
  input_usd_per_mtok: number;
  output_usd_per_mtok: number;
  context_tokens: number;
  max_output_tokens: number;
  default_backup: string;
  simulated: boolean;
  available: 'yes' | 'stand_in' | 'no';
  /**
   * The engine that would answer a seat designed on this one now, by the call's own seat planning: itself, its first
   * real backup that can run here, or a `sim` stand-in (development only); null when none can.
   */
  answers: string | null;
};

/** `list_engines`: the catalog up to `tier`, with what a seat needs to know and whether each can run here now. */
export async function listEngines(deps: AuthoringDeps, author: Principal, tier: Tier = 'pro'): Promise<EngineListing[]> {
  const orgId = authorOrg(author);
  const own = orgId ? await ownProviderFamilies(deps.db, orgId) : new Set<string>();
  const standIns = simStandInsAllowed(deps.config);
  const ctx = callSeatingContext(deps.engines, { ownFamilies: own, simOnly: false }, deps.config);
  return deps.engines.catalog
    .filter((e) => TIER_RANK[e.tier] <= TIER_RANK[tier])
    .sort((a, b) => TIERS.indexOf(a.tier) - TIERS.indexOf(b.tier) || a.id.localeCompare(b.id))
    .map((e): EngineListing => {
      const direct = deps.engines.isAvailable(e.id) || own.has(e.family);
      return {
        id: e.id,
        family: e.family,
        maker: e.maker,
        tier: e.tier,
        input_usd_per_mtok: e.inputUsdPerMtok,
        output_usd_per_mtok: e.outputUsdPerMtok,
        context_tokens: e.contextTokens,
        max_output_tokens: e.maxOutputTokens,
        default_backup: e.backup,
        simulated: e.family === 'sim',
        // `stand_in`: no key here, so another engine answers for it (`answers`: a real backup, else a simulated one).
        available: direct ? 'yes' : standIns ? 'stand_in' : 'no',
        answers: seatChain(ctx, { designed: e.id, seatTier: e.tier, index: 0 })[0]?.engineId ?? null,
      };
    });
}

/** An operator acting on an existing mode acts as its organisation (a platform mode's is null). */
export async function operatorOf(deps: StoreDeps, modeId: string): Promise<Principal & { via: 'operator' }> {
  const mode = await readAuthoredMode(deps.db, modeId);
  if (!mode) throw new QuorumError('mode_not_found', `No mode ${modeId}.`);
  return { via: 'operator', orgId: mode.orgId };
}

/** The operator sets the price floor: the cheapest the price slider goes. */
export async function setPriceFloor(deps: StoreDeps, _author: Principal & { via: 'operator' }, floor: PriceFloor): Promise<void> {
  await writePriceFloor(deps.db, floor);
}
