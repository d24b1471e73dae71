import { ESLint } from 'eslint';
import assert from 'node:assert/strict';
import path from 'node:path';

/**
 * The layer rules of eslint.config.mjs (DESIGN §3), run through ESLint's own API on code that is never written
 * to disk: `filePath` decides which folder's rules apply (and, for no-cycle, where the file's imports lead).
 */
const eslint = new ESLint({ cwd: path.join(__dirname, '..', '..', '..') });

/** The layer-rule messages ESLint gives `code` as if it were the file `filePath`. */
async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  assert.ok(result, 'ESLint returned no result');
  // An unknown file or a parse error would pass every check below for the wrong reason.
  assert.ok(
    result.messages.every((m) => !m.fatal),
    `${filePath} did not parse: ${JSON.stringify(result.messages)}`,
  );
  return result.messages
    .filter((m) =>
      ['@typescript-eslint/no-restricted-imports', 'no-restricted-imports', 'no-restricted-syntax', 'import-x/no-cycle'].includes(
        m.ruleId ?? '',
      ),
    )
    .map((m) => m.message);
}

async function refused(filePath: string, code: string, why: RegExp): Promise<void> {
  const errors = await layerErrors(filePath, code);
  assert.equal(errors.length, 1, `${filePath}: expected one refusal of\n  ${code}\ngot ${JSON.stringify(errors)}`);
  assert.match(errors[0] ?? '', why);
}

async function accepted(filePath: string, code: string): Promise<void> {
  assert.deepEqual(await layerErrors(filePath, code), [], `${filePath}: expected\n  ${code}\nto be accepted`);
}

describe('lint: layers are enforced', function () {
  // The first lint loads the TypeScript parser.
  this.timeout(30_000);

  describe('domain/ is pure', () => {
    it('refuses other project folders', async () => {
      await refused(
        'domain/bad.ts',
        "import { createDb } from '../db/knex';\nexport const x = createDb;\n",
        /domain\/ is pure: it imports nothing from other project folders/,
      );
      await refused('domain/bad.ts', "import { redact } from '../infra/redact';\nexport const x = redact;\n", /domain\/ is pure/);
      await refused('domain/nested/bad.ts', "import type { Db } from '../../../db/knex';\nexport type X = Db;\n", /domain\/ is pure/);
      await refused('domain/bad.ts', "export * from '../api/app';\n", /domain\/ is pure/);
    });

    it('refuses Node I/O modules, with or without the node: prefix', async () => {
      await refused('domain/bad.ts', "import fs from 'node:fs';\nexport const x = fs;\n", /domain\/ is pure: no I\/O/);
      await refused('domain/bad.ts', "import { readFile } from 'fs/promises';\nexport const x = readFile;\n", /domain\/ is pure: no I\/O/);
      await refused('domain/bad.ts', "import { spawn } from 'node:child_process';\nexport const x = spawn;\n", /domain\/ is pure: no I\/O/);
      await refused('domain/bad.ts', "export const load = () => import('node:fs');\n", /domain\/ is pure: no dynamic import/);
    });

    it('refuses database, Temporal and HTTP packages', async () => {
      await refused('domain/bad.ts', "import knex from 'knex';\nexport const x = knex;\n", /domain\/ is pure: of npm packages/);
      await refused('domain/bad.ts', "import { Pool } from 'pg';\nexport const x = Pool;\n", /domain\/ is pure: of npm packages/);
      await refused(
        'domain/bad.ts',
        "import { sleep } from '@temporalio/workflow';\nexport const x = sleep;\n",
        /domain\/ is pure: of npm packages/,
      );
    });

    it('accepts its own modules, node:crypto and the pure libraries', async () => {
      await accepted(
        'domain/good.ts',
        "import { createHash } from 'node:crypto';\nimport { z } from 'zod';\nimport { encode } from 'gpt-tokenizer/encoding/o200k_base';\nimport { usdToMicros } from './money';\nexport const x = [createHash, z, encode, usdToMicros];\n",
      );
      await accepted('domain/nested/good.ts', "import { usdToMicros } from '../money';\nexport const x = usdToMicros;\n");
    });
  });

  describe('workflows/ are deterministic', () => {
    it('refuses a value import of an activity module', async () => {
      await refused(
        'workflows/bad.ts',
        "import { createDeliberationActivities } from '../activities/deliberation';\nexport const x = createDeliberationActivities;\n",
        /import activities only as types/,
      );
      await refused('workflows/bad.ts', "import '../activities/deliberation';\n", /import activities only as types/);
    });

    it('accepts activity modules imported as types', async () => {
      await accepted(
        'workflows/good.ts',
        "import type { DeliberationActivities } from '../activities/deliberation';\nexport type X = DeliberationActivities;\n",
      );
      await accepted(
        'workflows/good.ts',
        "import { type AccountActivities } from '../activities/accounts';\nexport type X = AccountActivities;\n",
      );
    });

    it('refuses the Temporal client, worker and activity packages', async () => {
      await refused(
        'workflows/bad.ts',
        "import { Client } from '@temporalio/client';\nexport const x = Client;\n",
        /workflows\/ run in the Temporal sandbox/,
      );
      await refused(
        'workflows/bad.ts',
        "import { Context } from '@temporalio/activity';\nexport const x = Context;\n",
        /workflows\/ run in the Temporal sandbox/,
      );
    });

    it('refuses Node modules, I/O folders and other packages', async () => {
      await refused(
        'workflows/bad.ts',
        "import { randomUUID } from 'node:crypto';\nexport const x = randomUUID;\n",
        /workflows\/ are deterministic and run in the Temporal sandbox: no Node module/,
      );
      await refused(
        'workflows/bad.ts',
        "import { createDb } from '../db/knex';\nexport const x = createDb;\n",
        /workflows\/ are deterministic: they import only domain/,
      );
      await refused(
        'workflows/bad.ts',
        "import { startTrialTimer } from '../starters/trial-credit';\nexport const x = startTrialTimer;\n",
        /workflows\/ are deterministic/,
      );
      await refused(
        'workflows/bad.ts',
        "import knex from 'knex';\nexport const x = knex;\n",
        /workflows\/ are deterministic: of npm packages/,
      );
    });

    it('accepts domain/, its own modules and the workflow SDK', async () => {
      await accepted(
        'workflows/good.ts',
        "import { sleep } from '@temporalio/workflow';\nimport { defineSearchAttributeKey } from '@temporalio/common';\nimport { trialEndsAt } from '../domain/trial';\nimport { TASK_QUEUES } from './task-queues';\nexport const x = [sleep, defineSearchAttributeKey, trialEndsAt, TASK_QUEUES];\n",
      );
    });
  });

  describe('inner layers never import operations/ or the edges (api/, cli/)', () => {
    for (const folder of ['db', 'worker', 'engines', 'activities', 'starters', 'infra']) {
      it(`${folder}/ refuses api/, cli/ and operations/`, async () => {
        await refused(
          `${folder}/bad.ts`,
          "import { createApp } from '../api/app';\nexport const x = createApp;\n",
          /api\/ and cli\/ are edges/,
        );
        await refused(`${folder}/bad.ts`, "import { main } from '../cli/main';\nexport const x = main;\n", /api\/ and cli\/ are edges/);
        await refused(
          `${folder}/bad.ts`,
          "import { estimate } from '../operations/estimate';\nexport const x = estimate;\n",
          /operations\/ the layer they call/,
        );
      });
    }

    it('db/repositories/ refuses them at any depth, and accepts the layers below', async () => {
      await refused(
        'db/repositories/bad.ts',
        "import type { Api } from '../../../api/app';\nexport type X = Api;\n",
        /api\/ and cli\/ are edges/,
      );
      await accepted(
        'db/good.ts',
        "import { usdToMicros } from '../domain/money';\nimport { loadConfig } from '../infra/config';\nexport const x = [usdToMicros, loadConfig];\n",
      );
    });

    it('operations/ refuses every edge, types included, and accepts the layers below', async () => {
      await refused(
        'operations/bad.ts',
        "import type { JsonObject } from '../api/forms/json';\nexport type X = JsonObject;\n",
        /operations\/ is the application layer under every edge/,
      );
      await refused(
        'operations/authoring/bad.ts',
        "import { authorize } from '../../api/http/access';\nexport const x = authorize;\n",
        /operations\/ is the application layer/,
      );
      await refused(
        'operations/bad.ts',
        "import { main } from '../cli/main';\nexport const x = main;\n",
        /operations\/ is the application layer/,
      );
      await accepted(
        'operations/good.ts',
        "import { findMode } from '../db/repositories/modes';\nimport { startDeliberation } from '../starters/deliberation';\nexport const x = [findMode, startDeliberation];\n",
      );
    });

    it('the edges themselves may import anything below them, db/ as types only', async () => {
      await accepted(
        'cli/good.ts',
        "import { createApp } from '../api/app';\nimport type { Db } from '../db/knex';\nimport { openDatabase } from '../operations/open';\nexport const x = [createApp, openDatabase];\nexport type Y = Db;\n",
      );
      await accepted(
        'api/console/pages/good.ts',
        "import type { RunRecord } from '../../../db/repositories/runs';\nexport type Y = RunRecord;\n",
      );
    });

    it('the CLI and api/ refuse a value import of db/ at any depth, beside an inline type too: they go through operations/', async () => {
      const why = /reach the database through operations\//;
      await refused(
        'api/console/pages/bad.ts',
        "import { findRun } from '../../../db/repositories/runs';\nexport const x = findRun;\n",
        why,
      );
      await refused(
        'api/console/bad.ts',
        "import { type Membership, membershipsOf } from '../../db/repositories/people';\nexport const x = membershipsOf;\nexport type Y = Membership;\n",
        why,
      );
      await refused('cli/bad.ts', "import { createDb } from '../db/knex';\nexport const x = createDb;\n", why);
      await refused('api/main.ts', "import { createDb } from '../db/knex';\nexport const x = createDb;\n", why);
      await refused('api/v1/bad.ts', "import { getReceipt } from '../../db/repositories/requests';\nexport const x = getReceipt;\n", why);
    });

    // Every file under api/: the edges, the plumbing and serialisers they share (http/, forms/), the entry files, and a
    // folder no block of eslint.config.mjs names yet.
    const apiFiles = [
      'oauth/bad.ts',
      'http/bad.ts',
      'forms/bad.ts',
      'mcp/bad.ts',
      'v1/bad.ts',
      'console/bad.ts',
      'app.ts',
      'later/nested/bad.ts',
    ];
    for (const file of apiFiles.map((f) => `api/${f}`)) {
      const up = '../'.repeat(file.split('/').length - 1);
      it(`${file} refuses a value import of db/ and accepts a type-only one`, async () => {
        const why = /reach the database through operations\/: they import db\/ as types only/;
        await refused(file, `import { admitRequest } from '${up}db/repositories/limits';\nexport const x = admitRequest;\n`, why);
        await refused(file, `import { OAuthStore } from '${up}db/repositories/oauth-store';\nexport const x = OAuthStore;\n`, why);
        await refused(
          file,
          `import { authenticate, type AuthenticatedKey } from '${up}db/repositories/api-keys';\nexport const x = authenticate;\nexport type Y = AuthenticatedKey;\n`,
          why,
        );
        await accepted(file, `import type { Admission } from '${up}db/repositories/limits';\nexport type X = Admission;\n`);
        await accepted(file, `import { type AuthenticatedKey } from '${up}db/repositories/api-keys';\nexport type Y = AuthenticatedKey;\n`);
        await accepted(file, `import { countRequests } from '${up}operations/callers';\nexport const x = countRequests;\n`);
      });
    }
  });

  describe('infra/ is the ground floor; stack/ (the launcher) the top', () => {
    it('infra/ refuses every other layer, types included', async () => {
      for (const [folder, module] of [
        ['db', 'knex'],
        ['starters', 'trial-credit'],
        ['worker', 'bundle'],
        ['workflows', 'search-attributes'],
        ['engines', 'catalog'],
        ['activities', 'callbacks'],
        ['stack', 'supervisor'],
      ]) {
        await refused(`infra/bad.ts`, `import { x } from '../${folder}/${module}';\nexport const y = x;\n`, /infra\/ is the ground floor/);
      }
      await refused('infra/bad.ts', "import type { Db } from '../db/knex';\nexport type X = Db;\n", /infra\/ is the ground floor/);
    });

    it('infra/ accepts its own modules and npm packages', async () => {
      await accepted('infra/good.ts', "import { z } from 'zod';\nimport { redact } from './redact';\nexport const x = [z, redact];\n");
    });

    it('no product folder imports stack/, at any depth', async () => {
      for (const file of [
        'api/main.ts',
        'api/console/bad.ts',
        'cli/bad.ts',
        'operations/bad.ts',
        'worker/bad.ts',
        'db/repositories/bad.ts',
        'bin/bad.js',
      ]) {
        const up = '../'.repeat(file.split('/').length - 1);
        await refused(file, `import { main } from '${up}stack/supervisor';\nexport const x = main;\n`, /stack\/ is npm start's launcher/);
      }
    });

    it('stack/, bench/ and test/ may import stack/ and every layer below', async () => {
      await accepted(
        'stack/good.ts',
        "import { createDb } from '../db/knex';\nimport { bundleInChild } from '../worker/bundle';\nimport { ensureGoProgram } from './go-binary';\nexport const x = [createDb, bundleInChild, ensureGoProgram];\n",
      );
      await accepted(
        'bench/good.ts',
        "import { resolveTemporalBinary } from '../stack/temporal-binary';\nexport const x = resolveTemporalBinary;\n",
      );
      await accepted(
        'test/harness/good.ts',
        "import { resolveTemporalBinary } from '../../stack/temporal-binary';\nexport const x = resolveTemporalBinary;\n",
      );
    });
  });

  describe('the edges of api/ never import each other', () => {
    const edges = ['v1', 'mcp', 'console', 'oauth'];
    for (const edge of edges) {
      it(`api/${edge}/ refuses the other edges`, async () => {
        for (const other of edges.filter((e) => e !== edge)) {
          await refused(
            `api/${edge}/bad.ts`,
            `import { x } from '../${other}/anything';\nexport const y = x;\n`,
            new RegExp(`api/${edge}/ is an edge: it never imports another edge`),
          );
        }
        await refused(
          `api/${edge}/nested/bad.ts`,
          `import type { X } from '../../${edges.find((e) => e !== edge) ?? ''}/anything';\nexport type Y = X;\n`,
          /is an edge: it never imports another edge/,
        );
      });
    }

    it('api/http/ and api/forms/ import no edge', async () => {
      await refused('api/http/bad.ts', "import { OAuthServer } from '../oauth/server';\nexport const x = OAuthServer;\n", /import no edge/);
      await refused('api/forms/bad.ts', "import type { X } from '../v1/runs';\nexport type Y = X;\n", /import no edge/);
    });

    it('an edge may import the shared plumbing, the serialisers and operations', async () => {
      await accepted(
        'api/mcp/good.ts',
        "import { authorize } from '../http/access';\nimport type { JsonObject } from '../forms/json';\nimport { estimate } from '../../operations/estimate';\nexport const x = [authorize, estimate];\nexport type Y = JsonObject;\n",
      );
      await accepted('api/console/pages/good.ts', "import { fieldsOf } from '../fields';\nexport const x = fieldsOf;\n");
    });
  });

  describe('no import cycle', () => {
    it('refuses a module that imports one that imports it back', async () => {
      // domain/estimate.ts imports domain/fees.ts: fees importing estimate closes a circle.
      await refused('domain/fees.ts', "import { quote } from './estimate';\nexport const x = quote;\n", /Dependency cycle detected/);
    });

    it('accepts the same import the other way round', async () => {
      await accepted('domain/good.ts', "import { callCeilingMicros } from './fees';\nexport const x = callCeilingMicros;\n");
    });
  });
});
