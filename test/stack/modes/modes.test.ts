import assert from 'node:assert/strict';
import { QuorumError } from '../../../domain/errors';
import { SYSTEM_MODES } from '../../../domain/modes';
import { findMode, listModesForOrg, upsertMode } from '../../../db/repositories/modes';
import { createOrganisation } from '../../../db/repositories/organisations';
import { stack } from '../../harness/stack';
import { uniqueTicker } from '../../harness/unique';

describe('modes: stored, versioned, entitled', () => {
  it('seeds the system modes: a panel, a debate and an express-only mode, each disclosing its provider families', async () => {
    const org = await createOrganisation(stack().db, { name: 'Mode Reader' });
    const modes = await listModesForOrg(stack().db, org.orgId);
    for (const seed of SYSTEM_MODES) {
      const m = modes.find((x) => x.id === seed.id);
      assert.ok(m, `${seed.id} missing`);
      assert.equal(m.ticker, seed.ticker);
      assert.match(m.ticker, /^[A-Z]+:[A-Z]{4}$/);
      assert.ok(m.config.providerFamilies.length > 0);
      assert.match(m.configHash, /^[0-9a-f]{12}$/);
    }
    assert.ok(
      modes.some((m) => m.config.critique === 'always' && m.config.rounds > 1),
      'a debate mode',
    );
    assert.ok(
      modes.some((m) => m.config.express === 'always'),
      'an express-only mode',
    );
    assert.ok(
      modes.some((m) => (m.config.tiers.plus?.seats.length ?? 0) === 3),
      'a three-seat panel',
    );
  });

  it('versions a changed panel: a new version and a new mode_config_hash; an unchanged save keeps both', async () => {
    const db = stack().db;
    const org = await createOrganisation(db, { name: 'Mode Author' });
    const base = SYSTEM_MODES[0];
    const spec = { ...base, id: `author-${org.orgId}`, ticker: uniqueTicker('MINE'), orgId: org.orgId, published: true };
    const v1 = await upsertMode(db, spec);
    assert.equal(v1.version, 1);
    const same = await upsertMode(db, { ...spec, description: 'only the text changed' });
    assert.equal(same.version, 1);
    assert.equal(same.configHash, v1.configHash);
    const v2 = await upsertMode(db, {
      ...spec,
      config: {
        ...spec.config,
        tiers: {
          ...spec.config.tiers,
          plus: { seats: ['openai/gpt-4.1', 'google/gemini-2.5-flash', 'bedrock/meta.llama3-3-70b-instruct'] },
        },
      },
    });
    assert.equal(v2.version, 2);
    assert.notEqual(v2.configHash, v1.configHash);
    assert.equal((await db('mode_versions').where({ mode_id: spec.id })).length, 2);
  });

  it("opens a :LAB ticker to its author only, and an organisation's mode to that organisation only", async () => {
    const db = stack().db;
    const author = await createOrganisation(db, { name: 'Lab Author' });
    const other = await createOrganisation(db, { name: 'Someone Else' });
    const mode = await upsertMode(db, {
      ...SYSTEM_MODES[0],
      id: `lab-${author.orgId}`,
      ticker: 'LABCO:TEST',
      orgId: author.orgId,
      published: false,
    });
    assert.equal((await findMode(db, { orgId: author.orgId, form: 'B', model: 'LABCO:TEST:LAB' }))?.id, mode.id);
    await assert.rejects(
      findMode(db, { orgId: other.orgId, form: 'B', model: 'LABCO:TEST:LAB' }),
      (e: unknown) => e instanceof QuorumError && e.code === 'lab_not_available',
    );
    assert.equal(await findMode(db, { orgId: other.orgId, form: 'B', model: 'LABCO:TEST' }), undefined);
    assert.equal(await findMode(db, { orgId: other.orgId, form: 'A', model: mode.id }), undefined);
    assert.ok(!(await listModesForOrg(db, other.orgId)).some((m) => m.id === mode.id));
  });

  it('refuses a malformed ticker and changes nothing', async () => {
    const db = stack().db;
    const org = await createOrganisation(db, { name: 'Bad Ticker' });
    for (const ticker of ['QRM:PANEL', 'qrm:panl', 'QRM:PANL:LAB', 'PANL']) {
      await assert.rejects(
        upsertMode(db, { ...SYSTEM_MODES[0], id: `bad-${org.orgId}`, ticker, orgId: org.orgId, published: true }),
        (e: unknown) => e instanceof QuorumError && e.code === 'invalid_request',
      );
    }
    assert.equal(
      await db('modes')
        .where({ id: `bad-${org.orgId}` })
        .first(),
      undefined,
    );
  });
});
