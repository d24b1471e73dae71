import type { Server } from 'node:http';
import { entrySettingsOf } from '../../harness/settings';
import { freePort } from '../../../infra/free-port';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../../api/app';
import { listen } from '../../../api/listen';
import { authenticateKey } from '../../../operations/callers';
import type { KeyPrincipal } from '../../../operations/principal';
import type { RunSettings } from '../../../operations/run-settings';
import type { Db } from '../../../db/knex';
import type { Form } from '../../../domain/form';
import type { KeyKind } from '../../../domain/api-keys';
import { createApiKey, type CreateApiKeyInput } from '../../../db/repositories/api-keys';
import { getBalance } from '../../../db/repositories/ledger';
import { createOrganisation } from '../../../db/repositories/organisations';
import { createLogger } from '../../../infra/log';
import { stack } from '../../harness/stack';

export const FORMS: readonly Form[] = ['A', 'B'];
/** A system mode as each Form names it. */
export const PANEL: Readonly<Record<Form, string>> = { A: 'quorum-panel', B: 'QRM:PANL' };
export const EXPRESS: Readonly<Record<Form, string>> = { A: 'quorum-express', B: 'QRM:EXPR' };

export interface Api {
  url: string;
  form: Form;
  server: Server;
  close(): Promise<void>;
}

/** The product's app for one Form on a free port, against the shared test stack (or a pool of the caller's). */
export async function startApi(
  form: Form,
  opts: { db?: Db; runs?: RunSettings; log?: (line: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<Api> {
  const { env, namespace } = stack();
  const db = opts.db ?? stack().db;
  // The port is known before the app is built: the OAuth issuer and resources are named from the public URL.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = createLogger('test-api', opts.log ?? (() => undefined));
  const app = createApp({
    db,
    temporal: env.connection,
    namespace,
    log,
    form,
    client: env.client,
    runs: opts.runs,
    ...entrySettingsOf({ ...(opts.env ?? process.env), QUORUM_PUBLIC_URL: opts.env?.QUORUM_PUBLIC_URL ?? url }, log),
  });
  const server: Server = listen(app, port, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url,
    form,
    server,
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

export interface TestOrg {
  orgId: string;
  ownerKey: string;
  keyId: string;
}

export async function newOrg(creditUsd = 20): Promise<TestOrg> {
  const org = await createOrganisation(stack().db, {
    name: `API ${randomUUID().slice(0, 8)}`,
    creditMicros: BigInt(creditUsd * 1_000_000),
  });
  return { orgId: org.orgId, ownerKey: org.apiKey, keyId: org.keyId };
}

export async function newKey(
  orgId: string,
  opts: Omit<CreateApiKeyInput, 'orgId' | 'keyKind'> & { keyKind?: KeyKind } = {},
): Promise<string> {
  return (await createApiKey(stack().db, { orgId, ...opts, keyKind: opts.keyKind ?? 'live' })).apiKey;
}

/** The principal the gate makes of `rawKey` on `edge` (the real `authenticateKey`), for calling operations in process. */
export function keyPrincipal(rawKey: string, edge: KeyPrincipal['edge'] = 'api'): Promise<KeyPrincipal> {
  return authenticateKey(stack(), rawKey, { edge });
}

export interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & {
    error?: { message: string; type: string; code: string; param: string | null };
    svc?: Record<string, unknown>;
  };
}

export async function call(
  api: Pick<Api, 'url'>,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let payload: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(api.url + path, { method, headers, body: payload });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Reply['body']) : {} };
}

export const USER = (content: string): { role: 'user'; content: string }[] => [{ role: 'user', content }];

/** Balance, reserved amount and ledger length: what a rejected request must never change. */
export async function moneySnapshot(orgId: string): Promise<string> {
  const { db } = stack();
  const b = await getBalance(db, orgId);
  const [{ n }] = await db('ledger_entries').where({ org_id: orgId }).count<{ n: string }[]>('* as n');
  return `${b.balanceMicros}/${b.reservedMicros}/${n}`;
}
