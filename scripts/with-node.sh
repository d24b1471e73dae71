#!/usr/bin/env bash
# Runs a command on Node 22 or later (scripts/node-env.sh): `scripts/with-node.sh node dist/stack/supervisor.js`.
set -euo pipefail
# shellcheck source=scripts/node-env.sh
source "$(dirname "$0")/node-env.sh"
exec "$@"
