#!/usr/bin/env bash
# Builds the real kustomize (sigs.k8s.io/kustomize/kustomize/v5) into .tools/bin/, where
# test/deploy/kustomize-build.test.ts looks for it: the tests render k8s/, the demo example and a
# base written by `tilehouse k8s` with the tool `kubectl apply -k` embeds. Run it as
# `npm run setup:kustomize`; running it again is a no-op once the right version is there.
#
# Built from the committed scripts/kustomize/go.mod + go.sum (see lib/build-go-tool.sh for why).
# v5.7.1, not the newest: v5.8 requires Go >= 1.27, newer than the Go these machines build with.
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

readonly VERSION='v5.7.1'
readonly PACKAGE='sigs.k8s.io/kustomize/kustomize/v5'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/kustomize"
bin_dir="${KUSTOMIZE_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/kustomize"

log() { printf '[setup:kustomize] %s\n' "$*"; }
fail() { printf '[setup:kustomize] error: %s\n' "$*" >&2; exit 1; }

# kustomize reports the version stamped at build time (-X .../provenance.version), so a binary from
# another version or another build is rebuilt rather than trusted.
if [[ -x "$bin" ]]; then
  installed="$("$bin" version 2>/dev/null || true)"
  if [[ "$installed" == "$VERSION" ]]; then
    log "kustomize $VERSION already installed at $bin; nothing to do"
    exit 0
  fi
  log "found $bin reporting '${installed:-no version}'; rebuilding $VERSION"
fi

grep -q "^require $PACKAGE $VERSION\$" "$module_dir/go.mod" \
  || fail "$module_dir/go.mod does not pin $PACKAGE $VERSION; keep the script and go.mod in step"

build_go_tool kustomize "$module_dir" "$bin" "$PACKAGE" \
  "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=$VERSION"
log "installed: kustomize $("$bin" version) at $bin"
