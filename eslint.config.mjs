import js from '@eslint/js';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

/*
 * Layers (DESIGN §3), enforced here so a stray import fails `npm run lint`:
 *   domain/     pure logic: imports only itself and a few pure npm libraries; no I/O, no process state.
 *   workflows/  deterministic, sandboxed: domain/, @temporalio/workflow|common, and activity modules as types.
 *   db/ worker/ engines/ activities/ starters/ authoring/ infra/  never reach up into the edges (api/, cli/).
 * Each rule names the project folders explicitly (at any depth of `../`), so a subfolder of a layer may still
 * import its siblings. test/lint/layers.test.ts shows each rule refusing a bad import.
 */

/** Every top-level folder of project code. A new one goes here too, so domain/ and workflows/ keep refusing it. */
const PROJECT_FOLDERS = [
  'activities',
  'api',
  'authoring',
  'bench',
  'bin',
  'cli',
  'db',
  'domain',
  'engines',
  'infra',
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
const DOMAIN_LIBS = ['zod', 'gpt-tokenizer'];
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
      regex: intoFolders(['api', 'cli']),
      message:
        'api/ and cli/ are edges: the inner layers (db/, worker/, engines/, activities/, starters/, authoring/, infra/) never import them. Move the shared code down (e.g. a workflow start into starters/, pure logic into domain/).',
    },
  ],
};

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
      'no-restricted-syntax': noDynamicImport('workflows/ are deterministic'),
    },
  },
  {
    files: ['db/**', 'worker/**', 'engines/**', 'activities/**', 'starters/**', 'authoring/**', 'infra/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', innerImports] },
  },
  {
    files: ['bin/**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', process: 'readonly', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
