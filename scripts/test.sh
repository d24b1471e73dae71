#!/usr/bin/env bash
# `npm test`, `npm run test:unit`, `npm run test:stack`: `scripts/test.sh FOLDER… -- ARG…` runs the tests under the
# FOLDERs (test/unit and test/stack: one mocha run, one stack for all), or, when any ARG is a file or folder, just
# those (`npm run test:unit -- test/unit/lint`); every other ARG (`--grep x`, `--bail`) goes to mocha as it is.
# A run of test/stack's whole tree is split into QUORUM_TEST_SHARDS (default 2) mocha processes side by side, each with
# its own stack (test/harness/shards.ts; docs/testing.md); QUORUM_TEST_SHARDS=1 runs it in one, as a file argument does.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/node-env.sh
source scripts/node-env.sh
folders=()
names=()
while [ $# -gt 0 ] && [ "$1" != '--' ]; do
  folders+=("$1/**/*.test.ts")
  names+=("$1")
  shift
done
[ $# -gt 0 ] && shift # the `--`
# A folder given stands for its test files: mocha alone would also load helpers and child scripts beside them.
args=()
specs=0
for arg in "$@"; do
  if [ -d "$arg" ]; then
    args+=("${arg%/}/**/*.test.ts")
    specs=1
  else
    [ -e "$arg" ] && specs=1
    args+=("$arg")
  fi
done
if [ $specs -eq 0 ] && [ "${QUORUM_TEST_SHARDS:-2}" != 1 ] && [[ " ${names[*]} " == *" test/stack "* ]]; then
  exec node --import tsx test/harness/shards.ts "${names[@]}" -- "$@"
fi
[ $specs -gt 0 ] || args=("${folders[@]}" "${args[@]}")
exec node_modules/.bin/mocha --recursive "${args[@]}"
