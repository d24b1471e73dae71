#!/usr/bin/env bash
# `npm test`, `npm run test:unit`, `npm run test:stack`: `scripts/test.sh FOLDER… -- ARG…` runs the tests under the
# FOLDERs (test/unit and test/stack: one mocha run, one stack for all), or, when any ARG is a file or folder, just
# those (`npm run test:unit -- test/unit/lint`); every other ARG (`--grep x`, `--bail`) goes to mocha as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/node-env.sh
source scripts/node-env.sh
folders=()
while [ $# -gt 0 ] && [ "$1" != '--' ]; do
  folders+=("$1/**/*.test.ts")
  shift
done
[ $# -gt 0 ] && shift # the `--`
specs=()
for arg in "$@"; do [ -e "$arg" ] && specs+=("$arg"); done
[ ${#specs[@]} -gt 0 ] || set -- "${folders[@]}" "$@"
exec node_modules/.bin/mocha --recursive "$@"
