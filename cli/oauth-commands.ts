import { z } from 'zod';
import { purgeExpiredGrants, rotateAuthorizationKeys } from '../operations/oauth-grants';
import { command, OPERATOR, type Command } from './command';

/**
 * The connected apps' authorization server (DESIGN §15): its keys are generated at first start and sealed with the
 * secret box; operators rotate them, and clear out expired tokens, codes and sessions.
 */

const rotateKeys = command({
  name: 'oauth rotate-keys',
  usage: '',
  options: {},
  input: z.strictObject({}),
  async run(_input, { resources, box }) {
    const ids = await rotateAuthorizationKeys({ db: resources.db, box }, OPERATOR);
    return {
      json: { signing_key: ids.signing, cookie_key: ids.cookie },
      text: `New signing key ${ids.signing} and cookie key ${ids.cookie}; APIs use them from their next start, and the previous two of each still verify.`,
    };
  },
});

const purgeExpired = command({
  name: 'oauth purge-expired',
  usage: '',
  options: {},
  input: z.strictObject({}),
  async run(_input, { resources }) {
    const removed = await purgeExpiredGrants(resources, OPERATOR);
    return { json: { removed }, text: `Removed ${removed} expired OAuth record(s).` };
  },
});

export const oauthCommands: readonly Command[] = [rotateKeys, purgeExpired];
