#!/usr/bin/env bash
# Builds the pinned BigQuery emulator (goccy/bigquery-emulator) into .tools/bin/, where the test
# global setup looks for it. Run it as `npm run setup:emulator`; running it again is a no-op once
# the right version is there.
#
# Why a build from a committed module instead of `go install ...@v0.8.1`: that form asks the module
# proxy for the module's @v/list (to check for deprecation), which some networks refuse (403).
# Building from scripts/bigquery-emulator/go.mod + go.sum needs only the pinned module versions and
# makes the build reproducible.
set -euo pipefail

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

command -v go >/dev/null 2>&1 || fail "the Go toolchain is needed to build the emulator (https://go.dev/dl/); go.mod asks for $(sed -n 's/^go //p' "$module_dir/go.mod")"
grep -q "^require github.com/goccy/bigquery-emulator $VERSION\$" "$module_dir/go.mod" \
  || fail "$module_dir/go.mod does not pin github.com/goccy/bigquery-emulator $VERSION; keep the script and go.mod in step"

mkdir -p "$bin_dir"
# Build beside the target and rename, so an interrupted build never leaves a half-written binary
# that a later run (or the test setup) would take for the real one.
partial="$(mktemp "$bin_dir/.bigquery-emulator.XXXXXX")"
trap 'rm -f "$partial"' EXIT

log "building bigquery-emulator $VERSION with $(go version | cut -d' ' -f3) into $bin"
log "the first build compiles the embedded SQL engine and takes several minutes; later builds hit the Go build cache"
started=$SECONDS
# CGO_ENABLED=0: v0.8 runs GoogleSQL and SQLite as pure Go (wasm2go / wasm), no C toolchain needed,
# and upstream builds its release binaries the same way. -mod=readonly: fail instead of silently
# resolving different versions than the committed go.sum.
(
  cd "$module_dir"
  CGO_ENABLED=0 go build -mod=readonly -trimpath \
    -ldflags "-s -w -X main.version=$VERSION -X main.revision=$REVISION" \
    -o "$partial" "$PACKAGE"
)
chmod 0755 "$partial"
mv -f "$partial" "$bin"
trap - EXIT

log "built in $((SECONDS - started))s: $("$bin" --version)"
