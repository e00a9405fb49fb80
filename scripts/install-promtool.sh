#!/usr/bin/env bash
# Builds the pinned Prometheus rules checker into .tools/bin/promtool-check-rules, where the deploy
# tests look for it to check k8s/prometheus-rules.yaml. Run it as `npm run setup:promtool`; running
# it again is a no-op once the right version is there.
#
# Not promtool itself, which was impractical here: cmd/promtool imports all of Prometheus's service
# discovery (the AWS, Azure, GCP, Kubernetes... SDKs); its cold build was still compiling the AWS SDK
# after 14 minutes on a shared 2-core machine and was stopped. scripts/promtool/main.go runs what
# `promtool check rules` runs (model/rulefmt with the promql parser, at the same pinned release):
# 2 min 21 s cold there, 26 MB of module downloads (156 MB unpacked). It has no `promtool test rules`.
#
# Built from the committed scripts/promtool/go.mod + go.sum (see lib/build-go-tool.sh for why).
# Prometheus's Go module is versioned v0.3MM.P for Prometheus 3.MM.P.
set -euo pipefail
# shellcheck source=lib/build-go-tool.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-go-tool.sh"

readonly VERSION='v0.316.0'
readonly PROMETHEUS_VERSION='3.16.0'
# The checker's own module (scripts/promtool/main.go), pinning github.com/prometheus/prometheus.
readonly PACKAGE='tilehouse/tools/promtool'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module_dir="$root/scripts/promtool"
bin_dir="${PROMTOOL_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/promtool-check-rules"

log() { printf '[setup:promtool] %s\n' "$*"; }
fail() { printf '[setup:promtool] error: %s\n' "$*" >&2; exit 1; }

# The version is stamped at build time (-X .../common/version.Version), so it identifies our build.
if [[ -x "$bin" ]]; then
  installed="$("$bin" --version 2>&1 | head -1 || true)"
  if [[ "$installed" == "promtool-check-rules, version $PROMETHEUS_VERSION "* ]]; then
    log "promtool-check-rules (Prometheus $PROMETHEUS_VERSION) already installed at $bin; nothing to do"
    exit 0
  fi
  log "found $bin reporting '${installed:-no version}'; rebuilding $PROMETHEUS_VERSION"
fi

grep -Eq "^(require )?[[:space:]]*github.com/prometheus/prometheus $VERSION\$" "$module_dir/go.mod" \
  || fail "$module_dir/go.mod does not pin github.com/prometheus/prometheus $VERSION; keep the script and go.mod in step"

readonly STAMP='github.com/prometheus/common/version'
build_go_tool promtool "$module_dir" "$bin" "$PACKAGE" "-s -w -X $STAMP.Version=$PROMETHEUS_VERSION -X $STAMP.Branch=HEAD"
log "installed: $("$bin" --version 2>&1 | head -1)"
