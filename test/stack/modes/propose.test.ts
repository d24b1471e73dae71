import assert from 'node:assert/strict';
import { loadConfig } from '../../../infra/config';
import { checkModeSpec, saveMode, type AuthoringDeps } from '../../../operations/authoring/modes';
import { proposeMode, type ModeProposal } from '../../../operations/authoring/propose';
import type { KeyPrincipal, Principal } from '../../../operations/principal';
import type { Db } from '../../../db/knex';
import { readAuthoredMode } from '../../../db/repositories/mode-authoring';
import { setProviderKey, type KeyFamily } from '../../../db/repositories/provider-credentials';
import { QuorumError } from '../../../domain/errors';
import type { Form } from '../../../domain/form';
import { createEngines } from '../../../engines';
import { FORMS, keyPrincipal, newKey, newOrg } from '../api/helpers';
import { limitedDb } from '../../harness/limited-db';
import { stack } from '../../harness/stack';
import { settingsOf, testSecretBox } from '../../harness/settings';

/** `proposeMode` against the real stack: a proposal passes the save rules, saves and releases; its refusals carry the spec's codes. */

function deps(form: Form, db: Db = stack().db): AuthoringDeps {
  return { db, form, engines: createEngines({ ...settingsOf(process.env) }), config: loadConfig() };
}

/** No service keys and no stand-ins: only the families the organisation connected its own keys for can run. */
function ownKeysOnly(form: Form = 'B'): AuthoringDeps {
  const { config, variable } = settingsOf({ QUORUM_SIM_STANDINS: 'off' });
  return { db: stack().db, form, engines: createEngines({ config, variable }), config };
}

async function orgWithKeys(families: readonly KeyFamily[]): Promise<KeyPrincipal> {
  const org = await newOrg();
  for (const family of families)
    await setProviderKey(stack().db, testSecretBox(), { orgId: org.orgId, family, apiKey: `sk-test-${family}-0123456789` });
  return liveKey(org.orgId);
}

/** A live key of the organisation with every mode allowed, as the MCP tools author with it. */
const liveKey = async (orgId: string): Promise<KeyPrincipal> => keyPrincipal(await newKey(orgId), 'mcp');

/** Someone signed in who has not joined or created an organisation yet. */
const NO_ORG_PERSON = { id: 'person_without_org', email: 'alone@example.test', name: 'Alone' };

const refusedWith =
  (code: string, status: number) =>
  (err: unknown): boolean => {
    assert.ok(err instanceof QuorumError, String(err));
    assert.equal(err.code, code, err.message);
    assert.equal(err.spec.status, status);
    return true;
  };

const engineIds = (p: ModeProposal): string[] =>
  Object.values(p.proposal.seats_by_tier).flatMap((row) => row.flatMap((s) => [s.engine, ...(s.backup ? [s.backup] : [])]));

/** Saves and releases the proposal as it stands; the stored release seats exactly the proposed engines. */
async function saveAndRelease(d: AuthoringDeps, author: Principal, p: ModeProposal): Promise<void> {
  const released = await saveMode(d, author, { spec: p.proposal, release: true });
  assert.equal(released.state, 'released');
  assert.equal(released.version, 1);
  assert.equal(released.name, p.proposal.name);
  assert.match(released.ticker, new RegExp(`:${p.proposal.ticker}$`));
  const stored = await readAuthoredMode(stack().db, released.mode_id);
  for (const [tier, row] of Object.entries(p.proposal.seats_by_tier))
    assert.deepEqual(
      stored?.config?.tiers[tier as 'experience' | 'plus' | 'pro']?.seats,
      row.map((s) => s.engine),
    );
  assert.equal(stored?.config?.rounds, p.proposal.rounds);
}

describe('advisor_propose_mode (authoring)', function () {
  this.timeout(60_000);

  for (const form of FORMS) {
    it(`Form ${form}: a proposal from a description validates, saves and releases`, async () => {
      const org = await newOrg();
      const author = await liveKey(org.orgId);
      const p = await proposeMode(deps(form), author, { description: 'Careful answers to hard maths and code questions' });
      assert.equal(p.valid, true);
      assert.deepEqual(await checkModeSpec(deps(form), author, { spec: p.proposal }), { valid: true, refusals: [] });
      assert.deepEqual([p.proposal.rounds, p.proposal.critique], [3, 'always']);
      assert.deepEqual(Object.keys(p.proposal.seats_by_tier), ['experience', 'plus', 'pro']);
      assert.equal(p.price.currency, 'usd');
      assert.equal(p.price.tier, 'pro');
      assert.deepEqual(p.price.per_call_usd, p.price.by_tier_usd.pro);
      const { light, medium, deep } = p.price.per_call_usd;
      assert.ok(light > 0 && light <= medium && medium <= deep, JSON.stringify(p.price));
      assert.ok(p.rationale.some((line) => line.startsWith('The judge is')));
      assert.match(p.next, /save_mode/);
      await saveAndRelease(deps(form), author, p);
    });
  }

  it('a second proposal from the same description takes a free name and ticker, and saves too', async () => {
    const org = await newOrg();
    const author = await liveKey(org.orgId);
    const description = 'Contested policy questions';
    const first = await proposeMode(deps('B'), author, { description });
    await saveAndRelease(deps('B'), author, first);
    const second = await proposeMode(deps('B'), author, { description });
    assert.equal(second.proposal.name, `${first.proposal.name} 2`);
    assert.notEqual(second.proposal.ticker, first.proposal.ticker);
    assert.ok(second.rationale.some((line) => line.includes(`already has a mode named "${first.proposal.name}"`)));
    assert.ok(second.rationale.some((line) => line.includes(`The ticker ${first.proposal.ticker} is another of your modes'`)));
    await saveAndRelease(deps('B'), author, second);
  });

  it('a budget picks cheaper engines that fit it', async () => {
    const author = await liveKey((await newOrg()).orgId);
    const description = 'Hard maths proofs';
    const dearest = await proposeMode(deps('B'), author, { description });
    const budgetUsd = Number((dearest.price.per_call_usd.deep / 2).toFixed(6));
    const p = await proposeMode(deps('B'), author, { description, budgetUsd });
    assert.equal(p.price.budget_usd, budgetUsd);
    assert.equal(p.price.within_budget, true);
    for (const byDepth of Object.values(p.price.by_tier_usd)) assert.ok(byDepth.deep <= budgetUsd, JSON.stringify(p.price));
    assert.ok((p.proposal.ceiling_usd ?? Infinity) <= budgetUsd);
    assert.notDeepEqual(engineIds(p), engineIds(dearest));
    await saveAndRelease(deps('B'), author, p);
  });

  it('seats only the engines that can run for the organisation (own keys, no stand-ins)', async () => {
    const author = await orgWithKeys(['openai', 'anthropic', 'google']);
    const p = await proposeMode(ownKeysOnly(), author, { description: 'Research questions' });
    const makers = new Set(engineIds(p).map((id) => id.split('/')[0]));
    assert.deepEqual([...makers].sort(), ['anthropic', 'google', 'openai']);
    await saveAndRelease(ownKeysOnly(), author, p);
  });

  it('too_few_engines (422) when a panel row cannot seat three makers; a lower tier still proposes', async () => {
    const author = await orgWithKeys(['openai', 'google']);
    await assert.rejects(proposeMode(ownKeysOnly(), author, { description: 'Hard maths' }), (err: unknown) => {
      refusedWith('too_few_engines', 422)(err);
      const shortfalls = (err as QuorumError).detail?.shortfalls as { tier: string; reason: string }[];
      assert.deepEqual(
        shortfalls.map((s) => s.tier),
        ['plus', 'pro'],
      );
      assert.match(shortfalls[0].reason, /makers: google, openai/);
      return true;
    });
    const express = await proposeMode(ownKeysOnly(), author, { description: 'Hard maths', tier: 'experience' });
    assert.equal(express.proposal.express, 'always');
    await saveAndRelease(ownKeysOnly(), author, express);
  });

  it('engines_unavailable (503) when the engine list cannot be read', async () => {
    const author = await liveKey((await newOrg()).orgId);
    const db = await limitedDb('propose_no_credentials', 'revoke select on provider_credentials from ROLE');
    try {
      await assert.rejects(proposeMode(deps('B', db), author, { description: 'Hard maths' }), refusedWith('engines_unavailable', 503));
    } finally {
      await db.destroy();
    }
  });

  it('a test key may propose: nothing is written', async () => {
    const org = await newOrg();
    const p = await proposeMode(deps('B'), await keyPrincipal(await newKey(org.orgId, { keyKind: 'test' }), 'mcp'), {
      description: 'Quick answers',
    });
    assert.equal(p.proposal.rounds, 1);
    assert.equal(Number((await stack().db('modes').where({ org_id: org.orgId }).count<{ n: string }[]>('* as n'))[0].n), 0);
  });

  it('refuses an empty description, a budget that is not positive, and an author without an organisation', async () => {
    const author = await liveKey((await newOrg()).orgId);
    await assert.rejects(proposeMode(deps('B'), author, { description: '  ' }), refusedWith('invalid_request', 400));
    await assert.rejects(proposeMode(deps('B'), author, { description: 'Maths', budgetUsd: 0 }), refusedWith('invalid_request', 400));
    await assert.rejects(
      proposeMode(deps('B'), author, { description: 'Maths', budgetUsd: Number.NaN }),
      refusedWith('invalid_request', 400),
    );
    await assert.rejects(
      proposeMode(deps('B'), { via: 'person', person: NO_ORG_PERSON, orgId: null, role: null }, { description: 'Maths' }),
      refusedWith('org_required', 400),
    );
  });
});
