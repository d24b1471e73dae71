import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { SCOPES } from '../domain/api-keys';
import { microsToUsd } from '../domain/money';
import { issueKey, revokeKey } from '../operations/api-keys';
import { parseNewKey } from '../operations/requests/organization';
import { addGroundingDocument } from '../operations/documents';
import { addBalance, balanceOf } from '../operations/ledger';
import { onboardOrganisation, setStatus } from '../operations/organisations';
import { KEY_FAMILIES, setOwnBedrockRole, setOwnProviderKey } from '../operations/provider-keys';
import { auditCommands } from './audit-commands';
import { billingCommands } from './billing-commands';
import { modeCommands } from './mode-commands';
import { planCommands } from './plan-commands';
import { oauthCommands } from './oauth-commands';
import { runCommands } from './run-commands';

export { UsageError, type Command } from './command';
import { command, dollars, list, OPERATOR, required, usd, UsageError, type Command } from './command';

const orgCreate = command({
  name: 'org create',
  usage: '--name NAME [--credit USD]',
  options: { name: { type: 'string' }, credit: { type: 'string' } },
  input: z.object({ name: required, credit: usd.optional() }),
  async run({ name, credit }, { resources, log }) {
    const client = await resources.temporal();
    const org = await onboardOrganisation({ db: resources.db, client, log }, OPERATOR, { name, creditMicros: credit });
    return {
      json: { org_id: org.orgId, api_key: org.apiKey, balance_usd: microsToUsd(org.balanceMicros) },
      text: `Created organisation ${org.orgId} (${name}), balance ${dollars(org.balanceMicros)} including the trial credit.\nOwner key (shown once, store it now): ${org.apiKey}`,
    };
  },
});

const orgStatus = (action: 'suspend' | 'resume'): Command =>
  command({
    name: `org ${action}`,
    usage: '--org ORG_ID',
    options: { org: { type: 'string' } },
    input: z.object({ org: required }),
    async run({ org }, { resources }) {
      const status = action === 'suspend' ? 'suspended' : 'active';
      await setStatus(resources, OPERATOR, org, status);
      return { json: { org_id: org, status }, text: `Organisation ${org} is ${status}.` };
    },
  });

const keyCreate = command({
  name: 'key create',
  usage: '--org ORG_ID [--test] [--label TEXT] [--scopes a,b] [--modes m1,m2] [--expires-at ISO_INSTANT] [--budget-usd AMOUNT] [--rpm N]',
  options: {
    org: { type: 'string' },
    test: { type: 'boolean' },
    label: { type: 'string' },
    scopes: { type: 'string' },
    modes: { type: 'string' },
    'expires-at': { type: 'string' },
    'budget-usd': { type: 'string' },
    rpm: { type: 'string' },
  },
  // The flags are read here only for their form; the key's fields are judged by the very schema and operation that
  // judge `POST /v1/organization/keys` (and the console's form): the CLI builds that body and hands it to parseNewKey.
  input: z.object({
    org: required,
    test: z.boolean().optional(),
    label: z.string().optional(),
    scopes: list(z.enum(SCOPES, { error: `must be among ${SCOPES.join(', ')}` })).optional(),
    modes: list(z.string().min(1, 'must not contain an empty mode')).optional(),
    'expires-at': z.iso
      .datetime({ offset: true, error: 'must be an ISO 8601 instant, e.g. 2027-01-31T00:00:00Z' })
      .transform((text) => new Date(text).getTime() / 1000)
      .refine((seconds) => Number.isInteger(seconds), 'must name a whole second')
      .optional(),
    'budget-usd': z.coerce.number({ error: 'must be a USD amount, e.g. 25' }).optional(),
    rpm: z.coerce.number({ error: 'must be a number' }).optional(),
  }),
  async run(input, { resources }) {
    const { org, test, label, scopes, modes } = input;
    const newKey = parseNewKey({
      kind: test ? 'test' : 'live',
      ...(label !== undefined && { label }),
      ...(scopes && { scopes }),
      ...(modes && { modes }),
      ...(input['expires-at'] !== undefined && { expires_at: input['expires-at'] }),
      ...(input['budget-usd'] !== undefined && { monthly_budget_usd: input['budget-usd'] }),
      ...(input.rpm !== undefined && { requests_per_minute: input.rpm }),
    });
    const { keyId, apiKey, key } = await issueKey(resources, OPERATOR, { orgId: org, ...newKey });
    const limits = [
      key.expiresAt && `expires ${key.expiresAt.toISOString()}`,
      key.monthlyBudgetMicros !== null && `monthly budget ${dollars(key.monthlyBudgetMicros)}`,
      key.requestsPerMinute !== null && `${key.requestsPerMinute} requests a minute`,
    ].filter((part): part is string => typeof part === 'string');
    return {
      json: {
        key_id: keyId,
        api_key: apiKey,
        label: key.label,
        expires_at: key.expiresAt?.toISOString() ?? null,
        monthly_budget_usd: key.monthlyBudgetMicros === null ? null : microsToUsd(key.monthlyBudgetMicros),
        requests_per_minute: key.requestsPerMinute,
      },
      text: `Created key ${keyId} for ${org}${limits.length > 0 ? ` (${limits.join(', ')})` : ''}.\nKey (shown once, store it now): ${apiKey}`,
    };
  },
});

const keyRevoke = command({
  name: 'key revoke',
  usage: '--key KEY_ID',
  options: { key: { type: 'string' } },
  input: z.object({ key: required }),
  async run({ key }, { resources }) {
    await revokeKey(resources, OPERATOR, key);
    return { json: { key_id: key, revoked: true }, text: `Key ${key} is revoked.` };
  },
});

const balanceAdd = command({
  name: 'balance add',
  usage: '--org ORG_ID --usd AMOUNT',
  options: { org: { type: 'string' }, usd: { type: 'string' } },
  input: z.object({ org: required, usd }),
  async run({ org, usd: amount }, { resources }) {
    const balance = await addBalance(resources, OPERATOR, { orgId: org, amountMicros: amount, note: 'operator top-up' });
    return {
      json: { org_id: org, balance_usd: microsToUsd(balance.balanceMicros) },
      text: `Added ${dollars(amount)} to ${org}; balance ${dollars(balance.balanceMicros)}.`,
    };
  },
});

const balanceShow = command({
  name: 'balance show',
  usage: '--org ORG_ID [--limit N]',
  options: { org: { type: 'string' }, limit: { type: 'string' } },
  input: z.object({ org: required, limit: z.coerce.number().int().min(1).max(1000).default(20) }),
  async run({ org, limit }, { resources }) {
    const { balance, entries } = await balanceOf(resources, OPERATOR, { orgId: org, limit });
    const lines = entries.map((e) =>
      [
        e.createdAt.toISOString(),
        e.kind.padEnd(15),
        dollars(e.amountMicros).padStart(14),
        e.reservedDeltaMicros ? `reserved ${dollars(e.reservedDeltaMicros)}` : '',
        e.requestId ?? '',
        e.note ?? '',
      ]
        .filter(Boolean)
        .join('  '),
    );
    return {
      json: {
        org_id: org,
        balance_usd: microsToUsd(balance.balanceMicros),
        reserved_usd: microsToUsd(balance.reservedMicros),
        available_usd: microsToUsd(balance.availableMicros),
        entries: entries.map((e) => ({
          id: e.id,
          kind: e.kind,
          amount_usd: microsToUsd(e.amountMicros),
          reserved_delta_usd: microsToUsd(e.reservedDeltaMicros),
          request_id: e.requestId,
          note: e.note,
          created_at: e.createdAt.toISOString(),
        })),
      },
      text: [
        `Organisation ${org}: balance ${dollars(balance.balanceMicros)}, reserved ${dollars(balance.reservedMicros)}, available ${dollars(balance.availableMicros)}`,
        `Last ${entries.length} ledger entries:`,
        ...lines,
      ].join('\n'),
    };
  },
});

const byokSet = command({
  name: 'byok set',
  usage: '--org ORG_ID (--family openai|anthropic|google --key-file PATH | --family bedrock --role-arn ARN --external-id ID)',
  options: {
    org: { type: 'string' },
    family: { type: 'string' },
    'key-file': { type: 'string' },
    'role-arn': { type: 'string' },
    'external-id': { type: 'string' },
  },
  input: z.discriminatedUnion(
    'family',
    [
      z.strictObject(
        { org: required, family: z.enum(KEY_FAMILIES), 'key-file': required },
        { error: 'is not an option for a key family (use --key-file)' },
      ),
      z.strictObject(
        { org: required, family: z.literal('bedrock'), 'role-arn': required, 'external-id': required },
        { error: 'is not an option for bedrock' },
      ),
    ],
    { error: 'must be openai, anthropic, google or bedrock' },
  ),
  async run(input, { resources, box }) {
    if (input.family === 'bedrock') {
      await setOwnBedrockRole(resources, OPERATOR, { orgId: input.org, roleArn: input['role-arn'], externalId: input['external-id'] });
      return {
        json: { org_id: input.org, family: 'bedrock', role_arn: input['role-arn'] },
        text: `Bedrock role ${input['role-arn']} set for ${input.org}.`,
      };
    }
    let apiKey: string;
    try {
      apiKey = fs.readFileSync(input['key-file'], 'utf8');
    } catch (err) {
      throw new UsageError(`--key-file cannot be read: ${(err as Error).message}`);
    }
    await setOwnProviderKey({ db: resources.db, box }, OPERATOR, { orgId: input.org, family: input.family, apiKey });
    // The key itself is never echoed.
    return {
      json: { org_id: input.org, family: input.family, configured: true },
      text: `${input.family} key stored encrypted for ${input.org}.`,
    };
  },
});

const docsAdd = command({
  name: 'docs add',
  usage: 'FILE...',
  options: {},
  positionals: true,
  input: z.object({ files: z.array(z.string()).min(1, 'name at least one FILE to add') }),
  async run({ files }, { resources }) {
    const added: { id: string; title: string }[] = [];
    for (const file of files) {
      const body = await fs.promises.readFile(file, 'utf8');
      const title = path.basename(file);
      added.push({ id: await addGroundingDocument(resources, OPERATOR, { title, body }), title });
    }
    return {
      json: { added: added.length, documents: added },
      text: `Added ${added.length} grounding document(s): ${added.map((d) => `${d.title} (#${d.id})`).join(', ')}`,
    };
  },
});

export const COMMANDS: readonly Command[] = [
  orgCreate,
  orgStatus('suspend'),
  orgStatus('resume'),
  ...billingCommands,
  ...planCommands,
  ...oauthCommands,
  keyCreate,
  keyRevoke,
  balanceAdd,
  balanceShow,
  byokSet,
  docsAdd,
  ...runCommands,
  ...modeCommands,
  ...auditCommands,
];
