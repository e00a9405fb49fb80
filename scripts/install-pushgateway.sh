#!/usr/bin/env bash
# Builds the pinned Prometheus Pushgateway into .tools/bin/, where the metrics tests look for it.
# Run it as `npm run setup:pushgateway`; running it again is a no-op once the right version is there.
#
# Same approach as install-bigquery-emulator.sh: a build from a committed module
# (scripts/pushgateway/go.mod + go.sum) needs only the pinned module versions from the Go module
# proxy, never its @v/list (which `go install pkg@version` asks for and some networks refuse).
set -euo pipefail

readonly VERSION='v1.11.1'
# The tag's commit, as recorded by the module proxy; printed by `pushgateway --version`.
readonly REVISION='aff0d834b730375fc965135e3e2d17d15f82a76f'
readonly PACKAGE='github.com/prometheus/pushgateway'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/pushgateway"
bin_dir="${PUSHGATEWAY_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/pushgateway"

log() { printf '[setup:pushgateway] %s\n' "$*"; }
fail() { printf '[setup:pushgateway] error: %s\n' "$*" >&2; exit 1; }

# The version is stamped at build time (-X .../common/version.Version), so it identifies our build.
if [[ -x "$bin" ]]; then
  installed="$("$bin" --version 2>&1 | head -1 || true)"
  if [[ "$installed" == "pushgateway, version ${VERSION#v} "* ]]; then
    log "pushgateway $VERSION already installed at $bin; nothing to do"
    exit 0
  fi
  log "found $bin reporting '${installed:-no version}'; rebuilding $VERSION"
fi

command -v go >/dev/null 2>&1 || fail "the Go toolchain is needed to build the Pushgateway (https://go.dev/dl/); go.mod asks for $(sed -n 's/^go //p' "$module_dir/go.mod")"
grep -q "^require $PACKAGE $VERSION\$" "$module_dir/go.mod" \
  || fail "$module_dir/go.mod does not pin $PACKAGE $VERSION; keep the script and go.mod in step"

mkdir -p "$bin_dir"
# Build beside the target and rename, so an interrupted build never leaves a half-written binary.
partial="$(mktemp "$bin_dir/.pushgateway.XXXXXX")"
trap 'rm -f "$partial"' EXIT

log "building pushgateway $VERSION with $(go version | cut -d' ' -f3) into $bin"
started=$SECONDS
readonly STAMP='github.com/prometheus/common/version'
# -mod=readonly: fail instead of silently resolving other versions than the committed go.sum.
(
  cd "$module_dir"
  CGO_ENABLED=0 go build -mod=readonly -trimpath \
    -ldflags "-s -w -X $STAMP.Version=${VERSION#v} -X $STAMP.Revision=$REVISION -X $STAMP.Branch=HEAD" \
    -o "$partial" "$PACKAGE"
)
chmod 0755 "$partial"
mv -f "$partial" "$bin"
trap - EXIT

log "built in $((SECONDS - started))s: $("$bin" --version 2>&1 | head -1)"
