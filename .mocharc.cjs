'use strict';
// Mocha's settings. The tests' own process (the in-process API, workers and CLI) runs AsyncLocalStorage as the
// product's processes do: PROCESS_NODE_FLAGS in infra/entry-point.ts (Node 22 needs the flag, Node 24 refuses it, being
// its default); test/unit/stack/compose.test.ts keeps the two equal.
const asyncContextFrame = Number(process.versions.node.split('.')[0]) < 24 ? ['experimental-async-context-frame'] : [];

module.exports = {
  'node-option': ['import=tsx', ...asyncContextFrame],
  extension: ['ts'],
  timeout: 120000,
  exit: true,
};
