#!/usr/bin/env bash
# Builds the pinned BigQuery emulator (goccy/bigquery-emulator) into .tools/bin/, where the test
# global setup looks for it. Run it as `npm run setup:emulator`; running it again is a no-op once
# the right version is there.
#
# Built from the committed scripts/bigquery-emulator/go.mod + go.sum (see lib/build-go-tool.sh for why).
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

readonly VERSION='v0.8.1'
# The tag's commit, as recorded by the module proxy; printed by `bigquery-emulator --version`.
readonly REVISION='a531d3d'
readonly PACKAGE='github.com/goccy/bigquery-emulator/cmd/bigquery-emulator'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/bigquery-emulator"
bin_dir="${BIGQUERY_EMULATOR_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/bigquery-emulator"

log() { printf '[setup:emulator] %s\n' "$*"; }
fail() { printf '[setup:emulator] error: %s\n' "$*" >&2; exit 1; }

# The --version line is stamped at build time (-X main.version), so it identifies our build exactly.
if [[ -x "$bin" ]]; then
  installed="$("$bin" --version 2>/dev/null || true)"
  if [[ "$installed" == "version: $VERSION "* ]]; then
    log "bigquery-emulator $VERSION already installed at $bin; nothing to do"
    exit 0
  fi
  log "found $bin reporting '${installed:-no version}'; rebuilding $VERSION"
fi

grep -q "^require github.com/goccy/bigquery-emulator $VERSION\$" "$module_dir/go.mod" \
  || fail "$module_dir/go.mod does not pin github.com/goccy/bigquery-emulator $VERSION; keep the script and go.mod in step"

log "the first build compiles the embedded SQL engine and takes several minutes; later builds hit the Go build cache"
# v0.8 runs GoogleSQL and SQLite as pure Go (wasm2go / wasm), so CGO_ENABLED=0 builds it, as
# upstream builds its release binaries.
build_go_tool bigquery-emulator "$module_dir" "$bin" "$PACKAGE" "-s -w -X main.version=$VERSION -X main.revision=$REVISION"
log "installed: $("$bin" --version)"
