#!/usr/bin/env bash
# Builds k8s-decode (scripts/k8s-decode: strict decoding of manifests into the Kubernetes API's Go
# types, offline) into .tools/bin/, where test/deploy/strict-decode.test.ts looks for it. Run it as
# `npm run setup:k8s-decode`; running it again rebuilds only what changed (the Go build cache).
# Built from the committed go.mod + go.sum, like the emulator and the Pushgateway: only the pinned
# module versions are fetched from the module proxy.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/k8s-decode"
bin_dir="${K8S_DECODE_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/k8s-decode"

log() { printf '[setup:k8s-decode] %s\n' "$*"; }
fail() { printf '[setup:k8s-decode] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || fail "the Go toolchain is needed (https://go.dev/dl/); go.mod asks for $(sed -n 's/^go //p' "$module_dir/go.mod")"
mkdir -p "$bin_dir"
partial="$(mktemp "$bin_dir/.k8s-decode.XXXXXX")"
trap 'rm -f "$partial"' EXIT
log "building k8s-decode ($(grep -m1 'k8s.io/api ' "$module_dir/go.mod" | xargs)) into $bin"
(
  cd "$module_dir"
  CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$partial" .
)
chmod 0755 "$partial"
mv -f "$partial" "$bin"
trap - EXIT
log "built $bin"
