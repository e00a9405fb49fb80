#!/usr/bin/env bash
# Builds the pinned Prometheus Pushgateway into .tools/bin/, where the metrics tests look for it.
# Run it as `npm run setup:pushgateway`; running it again is a no-op once the right version is there.
#
# Built from the committed scripts/pushgateway/go.mod + go.sum (see lib/build-go-tool.sh for why).
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

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

grep -q "^require $PACKAGE $VERSION\$" "$module_dir/go.mod" \
  || fail "$module_dir/go.mod does not pin $PACKAGE $VERSION; keep the script and go.mod in step"

readonly STAMP='github.com/prometheus/common/version'
build_go_tool pushgateway "$module_dir" "$bin" "$PACKAGE" "-s -w -X $STAMP.Version=${VERSION#v} -X $STAMP.Revision=$REVISION -X $STAMP.Branch=HEAD"
log "installed: $("$bin" --version 2>&1 | head -1)"
