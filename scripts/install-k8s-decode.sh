#!/usr/bin/env bash
# Builds k8s-decode (scripts/k8s-decode: strict decoding of manifests into the Kubernetes API's Go
# types, offline) into .tools/bin/, where test/deploy/strict-decode.test.ts looks for it. Run it as
# `npm run setup:k8s-decode`; running it again rebuilds only what changed (the Go build cache).
# Built from the committed go.mod + go.sum, like the emulator and the Pushgateway: only the pinned
# module versions are fetched from the module proxy.
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/k8s-decode"
bin_dir="${K8S_DECODE_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/k8s-decode"

log() { printf '[setup:k8s-decode] %s\n' "$*"; }

log "k8s.io/api $(grep -m1 'k8s.io/api ' "$module_dir/go.mod" | awk '{print $2}')"
build_go_tool k8s-decode "$module_dir" "$bin" . "-s -w"
