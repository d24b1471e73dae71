#!/usr/bin/env bash
# Finds a Chromium for the browser tests (test/harness/browser.ts) and prints its path as the last line of stdout.
#
# Order: $QUORUM_CHROMIUM_PATH if set (and then only that), else `chromium`, `chromium-browser`, `google-chrome` on
# PATH, each checked by running it with --version. With none, and running as root on a machine with apt-get, installs
# Debian's `chromium` package (playwright's own browser download cannot run where only package registries are
# reachable; Debian's mirror can), logging apt's output to test-output/chromium-install.log and printing one line to
# stderr saying it is installing and how long it took. Otherwise, or if the install fails, exits non-zero with what to
# install. Idempotent, and prints nothing but the path when a browser is already there.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG=${QUORUM_CHROMIUM_INSTALL_LOG:-$ROOT/test-output/chromium-install.log}
CANDIDATES=(chromium chromium-browser google-chrome)

fail() {
  echo "ensure-chromium: $*" >&2
  exit 1
}

# A candidate counts only if it runs: Ubuntu's `chromium-browser` may be a stub that points at a snap.
runs() {
  "$1" --version >/dev/null 2>&1
}

find_chromium() {
  local name found
  for name in "${CANDIDATES[@]}"; do
    found=$(command -v "$name" 2>/dev/null) || continue
    if runs "$found"; then
      echo "$found"
      return 0
    fi
  done
  return 1
}

if [ -n "${QUORUM_CHROMIUM_PATH:-}" ]; then
  [ -x "$QUORUM_CHROMIUM_PATH" ] || fail "QUORUM_CHROMIUM_PATH=$QUORUM_CHROMIUM_PATH is not an executable file (unset it to find or install Debian's chromium)"
  runs "$QUORUM_CHROMIUM_PATH" || fail "QUORUM_CHROMIUM_PATH=$QUORUM_CHROMIUM_PATH does not run ('$QUORUM_CHROMIUM_PATH --version' failed)"
  echo "$QUORUM_CHROMIUM_PATH"
  exit 0
fi

if found=$(find_chromium); then
  echo "$found"
  exit 0
fi

HOW="install Debian's chromium (as root: apt-get update && apt-get install -y chromium), or set QUORUM_CHROMIUM_PATH to a Chromium or Chrome executable"
[ "$(id -u)" -eq 0 ] || fail "no Chromium found (looked for ${CANDIDATES[*]} on PATH) and not root, so not installing one: $HOW"
command -v apt-get >/dev/null 2>&1 || fail "no Chromium found (looked for ${CANDIDATES[*]} on PATH) and no apt-get to install one: $HOW"

mkdir -p "$(dirname "$LOG")" || fail "cannot create the folder of $LOG"
start=$SECONDS
printf 'ensure-chromium: no Chromium found, installing Debian'"'"'s chromium with apt-get (log: %s)... ' "$LOG" >&2
# dpkg refuses to run without ldconfig and start-stop-daemon on PATH: a non-root PATH may lack the sbin folders.
{
  export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"
  echo "== $(date -u +%FT%TZ) apt-get update"
  apt-get update -qq &&
    echo "== $(date -u +%FT%TZ) apt-get install chromium" &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium
} >"$LOG" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
  echo "failed after $((SECONDS - start)) s" >&2
  tail -n 15 "$LOG" | sed 's/^/  | /' >&2
  fail "apt-get failed (exit $status; full log: $LOG): $HOW"
fi
echo "done in $((SECONDS - start)) s" >&2

found=$(find_chromium) || fail "apt-get installed chromium but none of ${CANDIDATES[*]} is on PATH and runs (log: $LOG): $HOW"
echo "$found"
