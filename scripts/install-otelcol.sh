#!/usr/bin/env bash
# Builds the pinned OpenTelemetry Collector for the telemetry tests (OTLP receiver in, file exporter
# out) into .tools/bin/otelcol. Run it as `npm run setup:otelcol`; running it again is a no-op once
# the right version is there.
#
# No ready-made distribution is on the Go module proxy, so scripts/otelcol/ holds what the
# Collector builder (go.opentelemetry.io/collector/cmd/builder v0.165.0) generates from
# builder-config.yaml (`builder --config builder-config.yaml --skip-compilation`), committed with
# a go.mod + go.sum made by `go mod tidy -e`: the builder's own `go mod tidy` fails because a
# test-only dependency of the file exporter (extension/encoding/otlpencodingextension@v0.165.1) is
# refused by the proxy; -e tolerates it, and the binary does not need it. Built from the committed
# module like every other tool (lib/build-go-tool.sh says why). ~5 min cold on 2 cores, ~55 MB.
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

readonly VERSION='0.165.0'
readonly PACKAGE='.'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/otelcol"
bin_dir="${OTELCOL_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/otelcol"

log() { printf '[setup:otelcol] %s\n' "$*"; }
fail() { printf '[setup:otelcol] error: %s\n' "$*" >&2; exit 1; }

# The builder stamps the version into main.go (BuildInfo); `otelcol --version` prints it.
if [[ -x "$bin" ]]; then
  installed="$("$bin" --version 2>&1 | head -1 || true)"
  if [[ "$installed" == *" version $VERSION" ]]; then
    log "otelcol $VERSION already installed at $bin; nothing to do"
    exit 0
  fi
  log "found $bin reporting '${installed:-no version}'; rebuilding $VERSION"
fi

grep -q "Version: *\"$VERSION\"" "$module_dir/main.go" \
  || fail "$module_dir/main.go is not the builder's output for $VERSION; keep the script and the generated sources in step"

build_go_tool otelcol "$module_dir" "$bin" "$PACKAGE" "-s -w"
log "installed: $("$bin" --version 2>&1 | head -1)"
