import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ENV_VARIABLES } from '../../../infra/config';

/**
 * Variables docs/configuration.md documents that EnvSchema does not hold, each for a reason: what a provider key
 * variable is named is resolved at start by name (engines/credentials.ts; an engines file names its own), the AWS
 * SDK reads its own, and `npm start`'s launcher reads its tools' settings itself.
 */
const DOCUMENTED_OUTSIDE_SCHEMA = new Set([
  // Provider keys and base URLs, read by name at start (engines/credentials.ts).
  'QUORUM_OPENAI_API_KEY',
  'QUORUM_OPENAI_BASE_URL',
  'QUORUM_ANTHROPIC_API_KEY',
  'QUORUM_ANTHROPIC_BASE_URL',
  'QUORUM_GOOGLE_API_KEY',
  'QUORUM_GOOGLE_BASE_URL',
  // AWS: read by name at start (engines/credentials.ts) and by the AWS SDK itself.
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  // Read by the test suite's shell script that finds or installs Chromium (scripts/ensure-chromium.sh).
  'QUORUM_CHROMIUM_PATH',
  'QUORUM_CHROMIUM_INSTALL_LOG',
]);

/** Every variable named in the first column of the table (`A`, `B`, and `…_DATA` forms written as "(or `…_DATA`)"). */
function documented(markdown: string): Set<string> {
  const names = new Set<string>();
  for (const line of markdown.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (!first) continue;
    const vars = [...first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] ?? '');
    for (const v of vars) names.add(v);
    if (first.includes('`…_DATA`')) for (const v of vars) if (v.endsWith('_PATH')) names.add(v.replace(/_PATH$/, '_DATA'));
  }
  // Names given in the Meaning column of the AWS row (the SDK's variables).
  const aws = markdown.split('\n').find((l) => l.startsWith('| `AWS_REGION`'));
  for (const m of aws?.matchAll(/`(AWS_[A-Z_]+)`/g) ?? []) names.add(m[1] ?? '');
  return names;
}

describe('docs/configuration.md and the configuration schema', () => {
  const markdown = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'configuration.md'), 'utf8');
  const docs = documented(markdown);

  it('documents every variable the schema reads', () => {
    const missing = ENV_VARIABLES.filter((v) => !docs.has(v));
    assert.deepEqual(missing, [], `add a row to docs/configuration.md for ${missing.join(', ')}`);
  });

  it('documents only variables the schema reads, or ones listed here as read elsewhere', () => {
    const schema = new Set<string>(ENV_VARIABLES);
    const unknown = [...docs].filter((v) => !schema.has(v) && !DOCUMENTED_OUTSIDE_SCHEMA.has(v));
    assert.deepEqual(unknown, [], `docs/configuration.md names variables nothing reads through the schema: ${unknown.join(', ')}`);
  });

  it('reads the table at all', () => {
    // A table the parser no longer understands would pass the two checks above for the wrong reason.
    assert.ok(docs.has('PORT') && docs.has('QUORUM_SEARXNG_URL') && docs.has('TEMPORAL_TLS_CLIENT_KEY_DATA'));
  });
});
