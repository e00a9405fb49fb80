#!/usr/bin/env bash
# Builds the pinned fake-gcs-server (fsouza/fake-gcs-server, a Cloud Storage stand-in) into
# .tools/bin/, where the gs:// sink tests look for it. Run it as `npm run setup:fake-gcs`; running
# it again is a no-op once the right version is there.
#
# Built from the committed scripts/fake-gcs-server/go.mod + go.sum (see lib/build-go-tool.sh for why).
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

readonly VERSION='v1.56.1'
readonly PACKAGE='github.com/fsouza/fake-gcs-server'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/fake-gcs-server"
bin_dir="${FAKE_GCS_SERVER_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/fake-gcs-server"

log() { printf '[setup:fake-gcs] %s\n' "$*"; }
fail() { printf '[setup:fake-gcs] error: %s\n' "$*" >&2; exit 1; }

# fake-gcs-server has no --version flag, so the version is read from the build info Go embeds in
# every binary (the module it was built from, with its version): it identifies our build exactly.
installed_version() {
  # The build info is plain text in the binary; grep -a reads it without a Go toolchain.
  grep -aoE "github\.com/fsouza/fake-gcs-server[[:space:]]+v[0-9]+\.[0-9]+\.[0-9]+" "$1" 2>/dev/null | head -1 | awk '{print $2}' || true
}

if [[ -x "$bin" ]]; then
  installed="$(installed_version "$bin")"
  if [[ "$installed" == "$VERSION" ]]; then
    log "fake-gcs-server $VERSION already installed at $bin; nothing to do"
    exit 0
  fi
  log "found $bin built from '${installed:-an unknown version}'; rebuilding $VERSION"
fi

grep -q "^require $PACKAGE $VERSION\$" "$module_dir/go.mod" \
  || fail "$module_dir/go.mod does not pin $PACKAGE $VERSION; keep the script and go.mod in step"

build_go_tool fake-gcs-server "$module_dir" "$bin" "$PACKAGE" "-s -w"
installed="$(installed_version "$bin")"
[[ "$installed" == "$VERSION" ]] || fail "built $bin, but its build info names '${installed:-no version}', not $VERSION"
log "installed: fake-gcs-server $installed at $bin"
