#!/usr/bin/env bash
# `npm start` (`npm run start:cluster` passes `--cluster`): builds, then becomes the supervisor (stack/supervisor.ts).
# A process manager stops `npm start` by signalling npm's pid; npm passes SIGINT/SIGTERM to its script's process
# only. So no shell may stay between npm and the supervisor to swallow them: package.json `exec`s this script, and
# this script `exec`s node once the build is done.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/node-env.sh
source scripts/node-env.sh
npm run build --silent
exec node dist/stack/supervisor.js "$@"
