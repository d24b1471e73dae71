import js from '@eslint/js';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/*
 * Layers (DESIGN §3), enforced here so a stray import fails `npm run lint`:
 *   api/{v1,mcp,console,oauth}  the edges: siblings that never import each other; api/http and api/forms hold
 *               what they share, and import no edge. Every file under api/, and cli/, imports db/ as types only: it
 *               reaches the database through operations/.
 *   operations/ the application layer every edge and the CLI call: never imports an edge (api/, cli/).
 *   domain/     pure logic: imports only itself and a few pure npm libraries; no I/O, no process state.
 *   workflows/  deterministic, sandboxed: domain/, @temporalio/workflow|common, and activity modules as types.
 *   db/ worker/ engines/ activities/ starters/ infra/  never reach up into operations/ or the edges.
 *   infra/      the ground floor every layer stands on: it imports no other project folder.
 *   stack/      `npm start`'s launcher, the top floor: only bench/ and test/ import it.
 * And no import cycle anywhere (import-x/no-cycle). Each rule names the project folders explicitly (at any depth of
 * `../`), so a subfolder of a layer may still import its siblings. test/unit/lint/layers.test.ts shows each rule
 * refusing a bad import.
 */

/** Every top-level folder of project code. A new one goes here too, so domain/ and workflows/ keep refusing it. */
const PROJECT_FOLDERS = [
  'activities',
  'api',
  'bench',
  'bin',
  'cli',
  'db',
  'domain',
  'engines',
  'infra',
  'operations',
  'stack',
  'starters',
  'test',
  'worker',
  'workflows',
];

/** A relative import that reaches into one of `folders` from a sibling folder, at any depth: `../db`, `../../db/knex`. */
const intoFolders = (folders) => `^(\\.\\./)+(${folders.join('|')})(/|$)`;
const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Node's built-in modules named without the `node:` prefix (`fs`, `fs/promises`, `child_process`…). */
const bareBuiltins = builtinModules.filter((m) => !m.startsWith('_') && !m.startsWith('node:'));
const bareBuiltinRe = `^(${bareBuiltins.map(escapeRe).join('|')})(/|$)`;

/** npm libraries domain/ may use: each is pure computation (no I/O, no global state we depend on). */
const DOMAIN_LIBS = ['zod', 'gpt-tokenizer', 'ajv'];
/** Node modules domain/ may use: hashing and random bytes, nothing that touches files, network or processes. */
const DOMAIN_NODE = ['crypto'];

const domainImports = {
  patterns: [
    {
      regex: intoFolders(PROJECT_FOLDERS.filter((f) => f !== 'domain')),
      message:
        'domain/ is pure: it imports nothing from other project folders. Pass what it needs in as arguments, or move the code out of domain/.',
    },
    {
      regex: `^node:(?!(${DOMAIN_NODE.join('|')})$)|${bareBuiltinRe}`,
      message: `domain/ is pure: no I/O and no process state, so no Node module but ${DOMAIN_NODE.map((m) => `node:${m}`).join(', ')}. Do the I/O in activities/, db/, engines/ or infra/.`,
    },
    {
      // Any other package (pg, knex, @temporalio/*, koa, SDKs…). A bare builtin is caught by the pattern above.
      regex: `^(?!\\.{1,2}(/|$)|node:|(${bareBuiltins.map(escapeRe).join('|')})(/|$)|(${DOMAIN_LIBS.map(escapeRe).join('|')})(/|$))`,
      message: `domain/ is pure: of npm packages it uses only ${DOMAIN_LIBS.join(', ')} (no I/O). Database, Temporal, HTTP and SDK code belongs in db/, activities/, workflows/, engines/ or api/; a new pure library is added to DOMAIN_LIBS in eslint.config.mjs.`,
    },
  ],
};

const WORKFLOW_PACKAGES = ['@temporalio/workflow', '@temporalio/common'];
const workflowImports = {
  patterns: [
    {
      regex: intoFolders(['activities']),
      allowTypeImports: true,
      message:
        "workflows/ import activities only as types (`import type … from '../activities/…'`) and call them through proxyActivities: activity code does I/O and runs in the worker, outside the workflow sandbox.",
    },
    {
      regex: intoFolders(PROJECT_FOLDERS.filter((f) => !['workflows', 'domain', 'activities'].includes(f))),
      message:
        'workflows/ are deterministic: they import only domain/ (pure), @temporalio/workflow, @temporalio/common and activity types. I/O happens in activities/; starting a workflow belongs in starters/.',
    },
    {
      regex: `^node:|${bareBuiltinRe}`,
      message: 'workflows/ are deterministic and run in the Temporal sandbox: no Node module. Do the I/O in an activity.',
    },
    {
      regex: `^@temporalio/(?!(workflow|common)(/|$))`,
      message:
        'workflows/ run in the Temporal sandbox: of the SDK only @temporalio/workflow and @temporalio/common. Clients belong in starters/, api/ or cli/; workers in worker/; activity context in activities/.',
    },
    {
      regex: `^(?!\\.{1,2}(/|$)|node:|@temporalio/|(${bareBuiltins.map(escapeRe).join('|')})(/|$))`,
      message: `workflows/ are deterministic: of npm packages they use only ${WORKFLOW_PACKAGES.join(', ')}. Pure helpers come in through domain/.`,
    },
  ],
};

const innerImports = {
  patterns: [
    {
      regex: intoFolders(['api', 'cli', 'operations']),
      message:
        'api/ and cli/ are edges and operations/ the layer they call: the inner layers (db/, worker/, engines/, activities/, starters/, infra/) never import them. Move the shared code down (e.g. a workflow start into starters/, pure logic into domain/).',
    },
  ],
};

/** infra/ is what every layer stands on; on top of the inner layers' rule it reaches into no other layer at all. */
const groundImports = {
  patterns: [
    ...innerImports.patterns,
    {
      regex: intoFolders(['db', 'starters', 'worker', 'workflows', 'engines', 'activities', 'stack']),
      message:
        "infra/ is the ground floor every layer stands on (config, log, secrets, Temporal connection): it imports no other layer. What needs db/, worker/, workflows/… to start the local stack belongs in stack/ (npm start's launcher).",
    },
  ],
};

/**
 * stack/ is `npm start`'s launcher: it starts the product from above, and nothing of the product imports it. Its
 * own rule (the base `no-restricted-imports`), so it adds to each folder's layer rule instead of replacing it.
 */
const launcherImports = {
  patterns: [
    {
      regex: intoFolders(['stack']),
      message:
        "stack/ is npm start's launcher, the top floor: only bench/ and test/ import it. What a product process needs at run time belongs in infra/ (or the layer it serves).",
    },
  ],
};

const operationsImports = {
  patterns: [
    {
      regex: intoFolders(['api', 'cli']),
      message:
        'operations/ is the application layer under every edge: it never imports an edge (api/, cli/). Declare the type it returns in operations/ and let the edge import it; take what it needs from an edge as an argument.',
    },
  ],
};

/** The edges of api/: each parses, calls an operation and serialises; none imports another. */
const EDGES = ['v1', 'mcp', 'console', 'oauth'];
/**
 * Every file under api/ (the edges, the plumbing and serialisers they share, the entry files) and cli/ reaches the
 * database through operations/ (DESIGN §3): it imports db/ as types only. Each api/ block below carries this pattern
 * beside its own, since a later block's `@typescript-eslint/no-restricted-imports` replaces an earlier one's.
 */
const dbValueImport = {
  regex: intoFolders(['db']),
  allowTypeImports: true,
  message:
    'api/ (every edge, the plumbing they share, the entry files) and cli/ reach the database through operations/: they import db/ as types only. Call the operation (or add one in operations/, named by its subject) that does the work.',
};
/** A relative import into one of api/'s `edges` from inside api/, at any depth: `../mcp/tools`, `../../oauth/server`. */
const intoEdges = (edges) => `^(\\.\\./)+(api/)?(${edges.join('|')})(/|$)`;
const edgeImports = (edge) => ({
  patterns: [
    {
      regex: intoEdges(EDGES.filter((e) => e !== edge)),
      message: `api/${edge}/ is an edge: it never imports another edge (${EDGES.filter((e) => e !== edge)
        .map((e) => `api/${e}/`)
        .join(
          ', ',
        )}). Move what both need to api/http/ (plumbing), api/forms/ (serialisers) or operations/; pass a capability in through the edge's deps.`,
    },
    dbValueImport,
  ],
});
const sharedApiImports = {
  patterns: [
    {
      regex: intoEdges(EDGES),
      message:
        'api/http/ and api/forms/ are what the edges share: they import no edge. Declare an interface here and let the edge implement it.',
    },
    dbValueImport,
  ],
};

/**
 * The environment is read once, at start, by the entry points and the configuration module (DESIGN §3), and handed
 * down as a Config or the snapshot they read; below them nothing reads `process.env`.
 */
const ENV_READERS = ['api/main.ts', 'worker/main.ts', 'worker/run.ts', 'cli/main.ts', 'db/migrate.ts', 'infra/config.ts'];
/** `npm start`'s launcher's entry points (stack/): each reads its configuration once and hands it down. */
const LAUNCHER_ENV_READERS = ['stack/supervisor.ts', 'stack/temporal-binary.ts', 'stack/local-model.ts'];
/** Product code: tests, benches and migrations aside (bin/ holds only the CLI's JavaScript shim). */
const PRODUCT_FOLDERS = PROJECT_FOLDERS.filter((f) => !['bench', 'bin', 'test'].includes(f));
const noEnvRead = [
  'error',
  {
    object: 'process',
    property: 'env',
    message:
      'Only the entry points and infra/config.ts read the environment: add the variable to EnvSchema (infra/config.ts) and docs/configuration.md, and take the setting from the Config the entry point hands down (a variable read by name: from the EnvLookup it gives the engines).',
  },
];
/** Below the entry points a setting comes typed, from the Config: no layer takes the raw environment to read it again. */
const noRawEnvironment = [
  'error',
  {
    types: {
      'NodeJS.ProcessEnv': {
        message:
          'Only the entry points and infra/config.ts hold the raw environment: take the Config (or a Pick of it) the entry point validated, and for a variable read by name an EnvLookup (infra/config.ts).',
      },
    },
  },
];

/** Dynamic import() would slip past no-restricted-imports. */
const noDynamicImport = (layer) => [
  'error',
  { selector: 'ImportExpression', message: `${layer}: no dynamic import(); static imports are what the layer rules check.` },
];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.tools/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['domain/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', domainImports],
      'no-restricted-syntax': noDynamicImport('domain/ is pure'),
    },
  },
  {
    files: ['workflows/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', workflowImports],
      'no-restricted-syntax': [
        ...noDynamicImport('workflows/ are deterministic'),
        {
          selector: "CallExpression[callee.name='proxyLocalActivities'] > ObjectExpression",
          message:
            "A local activity takes its timeouts from workflows/local-activity-timeouts.ts (no start-to-close: Core leaks a retried try's timer).",
        },
      ],
    },
  },
  {
    files: ['db/**', 'worker/**', 'engines/**', 'activities/**', 'starters/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', innerImports] },
  },
  {
    files: ['infra/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', groundImports] },
  },
  {
    files: ['**/*.ts', '**/*.js'],
    // infra/'s own rule refuses stack/ already (one message per bad import).
    ignores: ['stack/**', 'bench/**', 'test/**', 'infra/**'],
    rules: { 'no-restricted-imports': ['error', launcherImports] },
  },
  {
    files: ['operations/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', operationsImports] },
  },
  {
    // The CLI and every file under api/: the entry files (main.ts, app.ts) and any folder the blocks below do not name.
    files: ['cli/**', 'api/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [dbValueImport] }] },
  },
  ...EDGES.map((edge) => ({
    files: [`api/${edge}/**`],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', edgeImports(edge)] },
  })),
  {
    files: ['api/http/**', 'api/forms/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', sharedApiImports] },
  },
  {
    // Type-only imports count too: a circle of types still ties the modules into one unit to read and change.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    // The plugin's TypeScript settings (parser and extensions for the files it follows), with the TypeScript resolver.
    settings: { ...importX.flatConfigs.typescript.settings, 'import-x/resolver-next': [createTypeScriptImportResolver()] },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    files: PRODUCT_FOLDERS.map((f) => `${f}/**/*.ts`),
    ignores: [...ENV_READERS, ...LAUNCHER_ENV_READERS, 'db/migrations/**'],
    rules: { 'no-restricted-properties': noEnvRead },
  },
  {
    // npm start's launcher (stack/) hands environments to the processes it starts, as infra/entry-point.ts forks one.
    files: PRODUCT_FOLDERS.filter((f) => f !== 'stack').map((f) => `${f}/**/*.ts`),
    ignores: [...ENV_READERS, 'infra/entry-point.ts', 'db/migrations/**'],
    rules: { '@typescript-eslint/no-restricted-types': noRawEnvironment },
  },
  {
    // A function longer than a screen and a half no longer reads as its steps: split it into named parts (as runPanel).
    files: PRODUCT_FOLDERS.map((f) => `${f}/**/*.ts`),
    ignores: ['db/migrations/**'],
    rules: { 'max-lines-per-function': ['error', { max: 120, skipBlankLines: false, skipComments: false, IIFEs: true }] },
  },
  {
    files: ['bin/**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', process: 'readonly', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Preloaded with `node --require` into every thread of the process it measures: plain CommonJS.
    files: ['bench/heap-probe.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', process: 'readonly', setInterval: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Mocha's settings, read by mocha before any TypeScript loads: plain CommonJS.
    files: ['.mocharc.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', process: 'readonly' } },
  },
);
