import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { modeTemplate } from '../../../domain/mode-spec';
import { newOrg, startApi, type Api } from '../api/helpers';
import { stack } from '../../harness/stack';
import { startProductWorkers } from '../deliberation/helpers';
import { demoModes } from '../runs/helpers';
import { Visitor } from './helpers';

/**
 * The web mode builder over HTTP (issue 14): the editor's refusals beside their fields with their codes, drafts,
 * releases, the lab version, publishing, and pricing and launching runs from a mode's page. Forms are posted as a
 * browser posts them: every field the page rendered, with the ones a person changed.
 */

const PASSWORD = 'correct horse battery staple';

const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const unescape = (s: string): string => s.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]);
const attrsOf = (tag: string): Map<string, string> =>
  new Map([...tag.matchAll(/([\w:-]+)(?:="([^"]*)")?/g)].map((m) => [m[1], unescape(m[2] ?? '')]));

/** The fields a browser would post from the form `id` (or the form posting to `action`) of a page: inputs, textareas, selects. */
function formFields(page: string, find: { id: string } | { action: string }): Record<string, string> {
  const forms = [...page.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)];
  const form = forms.find(([, attrs]) => {
    const a = attrsOf(attrs);
    return 'id' in find ? a.get('id') === find.id : a.get('action') === find.action;
  });
  assert.ok(form, `no form ${JSON.stringify(find)} on the page`);
  const body = form[2];
  const fields: Record<string, string> = {};
  for (const [, tag] of body.matchAll(/<input\b([^>]*)>/g)) {
    const a = attrsOf(tag);
    // The visitor adds the CSRF token itself.
    if (a.has('name') && a.get('name') !== '_csrf') fields[a.get('name') as string] = a.get('value') ?? '';
  }
  for (const [, tag, text] of body.matchAll(/<textarea\b([^>]*)>([\s\S]*?)<\/textarea\s*>/g))
    fields[attrsOf(tag).get('name') as string] = unescape(text.replace(/^\n/, ''));
  for (const [, tag, options] of body.matchAll(/<select\b([^>]*)>([\s\S]*?)<\/select\s*>/g)) {
    const all = [...options.matchAll(/<option\b([^>]*)>/g)].map(([, o]) => attrsOf(o));
    fields[attrsOf(tag).get('name') as string] = (all.find((o) => o.has('selected')) ?? all[0]).get('value') ?? '';
  }
  return fields;
}

/** The text of the element with this id (tags dropped, whitespace collapsed). */
function textOf(page: string, id: string): string {
  const start = page.indexOf(`id="${id}"`);
  assert.ok(start >= 0, `no #${id} on the page`);
  const open = page.lastIndexOf('<', start);
  const tag = /^<(\w+)/.exec(page.slice(open))?.[1] as string;
  const end = page.indexOf(`</${tag}>`, start);
  return unescape(
    page
      .slice(page.indexOf('>', start) + 1, end)
      .replace(/<[^>]+>/g, '')
      .replace(/\s+/g, ' ')
      .trim(),
  );
}

/** The opening tag of the element with this id. */
function tagOf(page: string, id: string): Map<string, string> {
  const start = page.indexOf(`id="${id}"`);
  assert.ok(start >= 0, `no #${id} on the page`);
  return attrsOf(page.slice(page.lastIndexOf('<', start), page.indexOf('>', start)));
}

async function signedIn(api: Api): Promise<{ v: Visitor; orgId: string; personId: string }> {
  const v = new Visitor(api);
  const email = `b-${randomUUID().slice(0, 8)}@example.com`;
  await v.signUp({ email, password: PASSWORD, org: `Builders ${randomUUID().slice(0, 6)}` });
  const row = (await stack()
    .db('people as p')
    .join('memberships as m', 'm.person_id', 'p.id')
    .whereRaw('lower(p.email) = ?', [email])
    .first('p.id', 'm.org_id')) as { id: string; org_id: string };
  return { v, orgId: row.org_id, personId: row.id };
}

describe('console: the mode builder', function () {
  this.timeout(60_000);
  let api: Api;
  // A launched run is admitted (row and charge) by its workflow's first step: a worker takes it.
  let workers: { stop(): Promise<void> };

  before(async () => {
    workers = await startProductWorkers();
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('shows each refusal beside its field with its code, saves the fixed spec as a draft, releases version 1 and publishes it', async () => {
    const { v } = await signedIn(api);
    const list = await v.get('/console/modes');
    assert.equal(list.status, 200);
    assert.match(list.body, /href="\/console\/modes\/new"/);

    const editor = await v.get('/console/modes/new');
    assert.equal(editor.status, 200);
    const blank = formFields(editor.body, { id: 'mode-form' });
    assert.equal(blank['seats_by_tier.experience.0'], 'openai/gpt-4.1-mini', 'the template fills the fields');
    const name = `Code Review ${randomUUID().slice(0, 4)}`;

    // Live validation (htmx): the refusal in the field's slot, swapped in by id.
    const live = await v.post('/console/modes/validate', { ...blank, name, ticker: 'ab' }, { headers: { 'hx-request': 'true' } });
    assert.equal(live.status, 200);
    assert.match(textOf(live.body, 'refusal-ticker'), /^ticker_invalid A ticker is exactly four letters/);
    assert.equal(tagOf(live.body, 'refusal-ticker').get('hx-swap-oob'), 'true');
    assert.equal(textOf(live.body, 'refusal-name'), '', 'a field that passes has an empty slot, clearing an old refusal');
    assert.match(textOf(live.body, 'refusal-summary'), /One refusal, each shown beside its field/);

    // A seat above its row's tier: the refusal path `seats_by_tier.plus[0]` lands beside the field `seats_by_tier.plus.0`.
    const seat = await v.post(
      '/console/modes/validate',
      { ...blank, name, ticker: 'CODE', 'seats_by_tier.plus.0': 'openai/gpt-5', 'seats_by_tier.plus.1': '', 'seats_by_tier.plus.2': '' },
      { headers: { 'hx-request': 'true' } },
    );
    assert.match(textOf(seat.body, 'refusal-seats_by_tier-plus-0'), /seat_engine_above_tier/);
    assert.match(textOf(seat.body, 'refusal-seats_by_tier-plus'), /six_seats_required/);

    // Saving the refused spec re-renders the form with the same markup, and saves nothing.
    const refused = await v.post('/console/modes/new', { ...blank, name, ticker: 'ab', action: 'draft' });
    assert.equal(refused.status, 422);
    assert.match(textOf(refused.body, 'refusal-ticker'), /^ticker_invalid /);
    assert.equal(tagOf(refused.body, 'field-ticker').get('aria-invalid'), 'true');
    assert.equal(tagOf(refused.body, 'field-ticker').get('aria-describedby'), 'refusal-ticker');
    assert.equal(tagOf(refused.body, 'field-name').get('aria-invalid'), undefined);
    assert.match(textOf(refused.body, 'refusal-summary'), /Nothing was saved\. \(mode_invalid\)/);
    assert.equal(formFields(refused.body, { id: 'mode-form' }).ticker, 'ab', 'the form keeps what was typed');
    assert.equal(await stack().db('modes').where({ name }).first('id'), undefined);

    // Fixed: a draft.
    const form = formFields(refused.body, { id: 'mode-form' });
    const saved = await v.post('/console/modes/new', { ...form, ticker: 'CODE', action: 'draft' });
    assert.equal(saved.status, 302, saved.body.slice(0, 3000));
    const modeId = /^\/console\/modes\/([^?]+)\?done=draft$/.exec(saved.location ?? '')?.[1] as string;
    assert.ok(modeId, saved.location ?? '');
    const stored = (await stack().db('modes').where({ id: modeId }).first('ticker', 'draft_config_hash', 'current_version')) as {
      ticker: string;
      draft_config_hash: string;
      current_version: number;
    };
    assert.equal(stored.current_version, 0);
    assert.match(stored.ticker, /:CODE$/);
    const draftPage = await v.get(`/console/modes/${modeId}?done=draft`);
    assert.match(textOf(draftPage.body, 'mode-notice'), new RegExp(`Draft saved \\(revision 1\\)\\. Call it as ${stored.ticker}:LAB\\.`));
    assert.match(textOf(draftPage.body, 'draft-row'), new RegExp(`Draft, revision 1 ${stored.draft_config_hash}`));
    assert.equal(formFields(draftPage.body, { id: 'mode-form' }).name, name, 'the editor shows the draft');

    // Released: version 1 with its hash, in the versions table and the modes list.
    await v.get(`/console/modes/${modeId}`);
    const released = await v.post(`/console/modes/${modeId}/release`, {});
    assert.equal(released.status, 302);
    const hash = (
      (await stack().db('mode_versions').where({ mode_id: modeId, version: 1 }).first('config_hash')) as { config_hash: string }
    ).config_hash;
    const releasedPage = await v.get(released.location as string);
    assert.equal(textOf(releasedPage.body, 'mode-notice'), `Released: version 1, mode_config_hash ${hash}.`);
    assert.match(textOf(releasedPage.body, 'versions'), new RegExp(`1 \\(current\\) ${hash}`));
    assert.doesNotMatch(releasedPage.body, /id="draft-row"/);
    const listed = await v.get('/console/modes');
    assert.match(
      textOf(listed.body, 'modes'),
      new RegExp(`${stored.ticker} ${name} released 1 ${hash} not listed not certified yet ${stored.ticker}:LAB`),
    );

    // Published.
    const published = await v.post(`/console/modes/${modeId}/publish`, {});
    assert.equal(published.status, 302);
    const publishedPage = await v.get(published.location as string);
    assert.match(textOf(publishedPage.body, 'listing'), /^Listing: listed at version 1\./);
    assert.equal(
      ((await stack().db('modes').where({ id: modeId }).first('listing_state')) as { listing_state: string }).listing_state,
      'listed',
    );
    assert.match(textOf((await v.get('/console/modes')).body, 'modes'), /listed \(version 1\)/);
  });

  it('a refusal of the save itself (name_taken) shows beside its field; a JSON that does not parse saves nothing; a pasted JSON is saved as pasted', async () => {
    const { v } = await signedIn(api);
    const blank = formFields((await v.get('/console/modes/new')).body, { id: 'mode-form' });
    const name = `Second Look ${randomUUID().slice(0, 4)}`;
    assert.equal((await v.post('/console/modes/new', { ...blank, name, ticker: 'LOOK', action: 'release' })).status, 302);

    const again = await v.post('/console/modes/new', { ...blank, name, ticker: 'LOKS', action: 'draft' });
    assert.equal(again.status, 409);
    assert.match(textOf(again.body, 'refusal-name'), /^name_taken This organisation already has a mode named/);

    const broken = await v.post('/console/modes/new', { ...blank, name: 'Other', ticker: 'OTHR', spec_json: '{"name": ', action: 'draft' });
    assert.equal(broken.status, 400);
    assert.match(textOf(broken.body, 'refusal-spec_json'), /^invalid_request The JSON is not a spec object/);
    assert.match(broken.body, /<details open>/, 'the JSON opens to show its refusal');
    assert.equal(await stack().db('modes').where({ name: 'Other' }).first('id'), undefined);

    // The fields were left as the page showed them, so the pasted JSON stands whole.
    const pastedName = `Pasted ${randomUUID().slice(0, 4)}`;
    const pasted = { ...modeTemplate(), name: pastedName, ticker: 'PAST', rounds: 3, critique: 'always' };
    const fromJson = await v.post('/console/modes/new', { ...blank, spec_json: JSON.stringify(pasted), action: 'release' });
    assert.equal(fromJson.status, 302, fromJson.body.slice(0, 2000));
    const page = await v.get(fromJson.location as string);
    const fields = formFields(page.body, { id: 'mode-form' });
    assert.deepEqual([fields.name, fields.ticker, fields.rounds, fields.critique], [pastedName, 'PAST', '3', 'always']);
    assert.deepEqual(JSON.parse(fields.spec_json), pasted, 'fields and JSON show the one spec');
  });

  it('starts from a description: the proposal fills the editor, checked, and saves as it stands', async () => {
    const { v } = await signedIn(api);
    await v.get('/console/modes/new');
    const proposed = await v.post('/console/modes/propose', {
      description: 'Careful answers to tax law questions, with sources',
      budget_usd: '',
    });
    assert.equal(proposed.status, 200, proposed.body.slice(0, 2000));
    assert.match(
      textOf(proposed.body, 'proposal'),
      /Nothing is saved until you save it below\..*Price per call at the \w+ tier: light \$[\d.]+/,
    );
    assert.match(textOf(proposed.body, 'refusal-summary'), /^No refusals: this spec passes every check a save runs\.$/);
    const form = formFields(proposed.body, { id: 'mode-form' });
    assert.ok(form.name.length >= 3 && /^[A-Z]{4}$/.test(form.ticker), JSON.stringify([form.name, form.ticker]));
    const saved = await v.post('/console/modes/new', { ...form, action: 'draft' });
    assert.equal(saved.status, 302, saved.body.slice(0, 2000));

    const empty = await v.post('/console/modes/propose', { description: ' ', budget_usd: '' });
    assert.equal(empty.status, 400);
    assert.match(textOf(empty.body, 'propose-error'), /\(invalid_request\)$/);
  });

  it('invites an organisation to the lab version, and names what refused an unknown one with its code', async () => {
    const { v } = await signedIn(api);
    const blank = formFields((await v.get('/console/modes/new')).body, { id: 'mode-form' });
    const saved = await v.post('/console/modes/new', {
      ...blank,
      name: `Lab ${randomUUID().slice(0, 4)}`,
      ticker: 'LABS',
      action: 'draft',
    });
    const modeId = /^\/console\/modes\/([^?]+)/.exec(saved.location ?? '')?.[1] as string;
    const guest = await newOrg();
    await v.get(`/console/modes/${modeId}`);
    const invited = await v.post(`/console/modes/${modeId}/invite`, { org_id: guest.orgId });
    assert.equal(invited.status, 302);
    assert.match(textOf((await v.get(invited.location as string)).body, 'lab-invited'), new RegExp(guest.orgId));
    const unknown = await v.post(`/console/modes/${modeId}/invite`, { org_id: 'org_nobody' });
    assert.equal(unknown.status, 404);
    assert.match(textOf(unknown.body, 'mode-error'), /^No organisation org_nobody\. \(not_found\)$/);

    // Another organisation's mode is not found, never shown.
    const stranger = (await signedIn(api)).v;
    const hidden = await stranger.get(`/console/modes/${modeId}`);
    assert.equal(hidden.status, 404);
    assert.match(hidden.body, /mode_not_found/);
  });

  it('prices a test run and a certification as dry runs, launches the test run once however often the form is sent, and shows a refusal with its code', async () => {
    const { v, orgId, personId } = await signedIn(api);
    const demo = await demoModes(orgId);
    const modeId = (await stack().db('modes').where({ ticker: demo.strong.B }).first('id')) as { id: string };
    const modePage = await v.get(`/console/modes/${modeId.id}`);
    assert.equal(modePage.status, 200);
    assert.match(modePage.body, /set up from code: it has no spec to edit/);

    const priceForm = formFields(modePage.body, { id: 'price-test' });
    const priced = await v.post(`/console/modes/${modeId.id}/runs/price`, {
      ...priceForm,
      'questions.easy': '2',
      'questions.medium': '1',
      'questions.hard': '0',
    });
    assert.equal(priced.status, 200, priced.body.slice(0, 3000));
    const price = textOf(priced.body, 'run-price-usd');
    assert.match(price, /^\$\d+\.\d{2,4}$/);
    assert.match(
      textOf(priced.body, 'run-price'),
      /^Priced: test run of 3 questions Price \$[\d.]+, about \d+ minutes? \(easy 2, medium 1, hard 0\)\. Priced only: nothing was started or charged\./,
    );
    assert.equal((await stack().db('runs').where({ org_id: orgId })).length, 0, 'a dry run starts nothing');

    const launchForm = formFields(priced.body, { action: `/console/modes/${modeId.id}/runs/launch` });
    const launched = await v.post(`/console/modes/${modeId.id}/runs/launch`, launchForm);
    assert.equal(launched.status, 302, launched.body.slice(0, 3000));
    const runId = /^\/console\/runs\/([0-9a-f-]{36})$/.exec(launched.location ?? '')?.[1] as string;
    assert.ok(runId, launched.location ?? '');
    const again = await v.post(`/console/modes/${modeId.id}/runs/launch`, launchForm);
    assert.equal(again.location, launched.location, 'a second submit of the same form is the same run');

    const runs = (await stack().db('runs').where({ org_id: orgId })) as {
      id: string;
      kind: string;
      api_key_id: string;
      key_mode: string;
      billed_micros: string;
      total_questions: number;
      state: string;
    }[];
    assert.equal(runs.length, 1);
    const [run] = runs;
    assert.deepEqual(
      [run.id, run.kind, run.api_key_id, run.key_mode, run.total_questions],
      [runId, 'test', `console:${personId}`, 'live', 3],
    );
    assert.notEqual(run.state, 'launching');
    assert.equal(`$${(Number(run.billed_micros) / 1e6).toFixed(price.length - price.indexOf('.') - 1)}`, price, 'charged the price shown');
    const charges = (await stack().db('ledger_entries').where({ org_id: orgId, request_id: runId })) as {
      kind: string;
      amount_micros: string;
    }[];
    assert.deepEqual(
      charges.map((c) => [c.kind, Number(c.amount_micros)]),
      [['test_run_charge', -Number(run.billed_micros)]],
    );

    // A certification's dry run: $50 flat, launchable (the demo mode is listed).
    const cert = await v.post(`/console/modes/${modeId.id}/runs/price`, formFields(modePage.body, { id: 'price-certification' }));
    assert.equal(cert.status, 200);
    assert.equal(textOf(cert.body, 'run-price-usd'), '$50.00');
    assert.match(cert.body, /Launch certification: charge \$50\.00/);

    // A count out of range is refused beside its field, with the code of /v1/tests.
    const bad = await v.post(`/console/modes/${modeId.id}/runs/price`, { ...priceForm, 'questions.easy': 'x' });
    assert.equal(bad.status, 400);
    assert.match(textOf(bad.body, 'refusal-questions-easy'), /^invalid_question_count /);
  });

  it('an authored mode on real engines is refused a live run here, with provider_unavailable and nothing charged', async () => {
    const { v, orgId } = await signedIn(api);
    const blank = formFields((await v.get('/console/modes/new')).body, { id: 'mode-form' });
    const saved = await v.post('/console/modes/new', {
      ...blank,
      name: `Real ${randomUUID().slice(0, 4)}`,
      ticker: 'REAL',
      action: 'release',
    });
    assert.equal(saved.status, 302);
    const modeId = /^\/console\/modes\/([^?]+)/.exec(saved.location ?? '')?.[1] as string;
    const modePage = await v.get(saved.location as string);
    const refused = await v.post(`/console/modes/${modeId}/runs/price`, formFields(modePage.body, { id: 'price-test' }));
    assert.equal(refused.status, 409);
    assert.match(
      textOf(refused.body, 'run-refusal'),
      /^The run needs engines that cannot run here: .* Nothing was charged\. \(provider_unavailable\)$/,
    );
    assert.equal((await stack().db('runs').where({ org_id: orgId })).length, 0);
  });

  it('in Form A: per-depth surcharges as fields, an optional ticker, the mode called by its id and runs counted in buckets', async () => {
    const formA = await startApi('A');
    try {
      const { v, orgId } = await signedIn(formA);
      const editor = await v.get('/console/modes/new');
      const blank = formFields(editor.body, { id: 'mode-form' });
      assert.equal(blank['fees.surcharge_by_depth_usd.deep'], '0.01');
      assert.equal(blank['fees.per_mtok_usd'], undefined, "Form B's fee is left to the JSON");
      const low = await v.post('/console/modes/new', {
        ...blank,
        name: 'Depth Panel',
        'fees.surcharge_by_depth_usd.deep': '0',
        action: 'draft',
      });
      assert.equal(low.status, 422);
      assert.match(textOf(low.body, 'refusal-fees-surcharge_by_depth_usd-deep'), /^price_below_floor /);
      const saved = await v.post('/console/modes/new', { ...blank, name: 'Depth Panel', action: 'release' });
      assert.equal(saved.status, 302, saved.body.slice(0, 2000));
      const modePage = await v.get(saved.location as string);
      assert.match(textOf(modePage.body, 'mode-summary'), /called as [a-z0-9]+-depth-panel$/);
      assert.doesNotMatch(modePage.body, /Lab version/, 'Form A calls no lab version');

      const demo = await demoModes(orgId);
      const priced = await v.post(`/console/modes/${demo.strong.A}/runs/price`, {
        kind: 'test',
        'buckets.light': '1',
        'buckets.medium': '1',
        'buckets.hard': '1',
      });
      assert.equal(priced.status, 200, priced.body.slice(0, 2000));
      assert.match(textOf(priced.body, 'run-price'), /\(light 1, medium 1, hard 1\)/);
    } finally {
      await formA.close();
    }
  });
});
