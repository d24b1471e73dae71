#!/usr/bin/env bash
# `npm test`: test/unit and test/stack in one mocha run (one stack for all). `npm test -- FILE…` runs just those
# files or folders; any other argument (`--grep x`, `--bail`) goes to mocha as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/node-env.sh
source scripts/node-env.sh
specs=()
for arg in "$@"; do [ -e "$arg" ] && specs+=("$arg"); done
[ ${#specs[@]} -gt 0 ] || set -- 'test/unit/**/*.test.ts' 'test/stack/**/*.test.ts' "$@"
exec node_modules/.bin/mocha --recursive "$@"
