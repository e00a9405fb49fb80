#!/usr/bin/env bash
# Builds pod-security (scripts/pod-security: every pod template on stdin judged against the Pod
# Security Standard "restricted" by the Pod Security Admission library, k8s.io/pod-security-admission)
# into .tools/bin/, where test/deploy/pod-security.test.ts looks for it. Run it as
# `npm run setup:pod-security`; running it again rebuilds only what changed (the Go build cache).
# Built from the committed go.mod + go.sum, like k8s-decode: only the pinned module versions are
# fetched from the module proxy.
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/pod-security"
bin_dir="${POD_SECURITY_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/pod-security"

log() { printf '[setup:pod-security] %s\n' "$*"; }

log "k8s.io/pod-security-admission $(grep -m1 'k8s.io/pod-security-admission ' "$module_dir/go.mod" | awk '{print $2}')"
build_go_tool pod-security "$module_dir" "$bin" . "-s -w"
