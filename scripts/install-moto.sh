#!/usr/bin/env bash
# Installs the pinned moto server (getmoto/moto, an S3-compatible stand-in from PyPI) into a venv
# under .tools/moto, with its launcher at .tools/bin/moto_server, where the s3:// sink tests look
# for it. Run it as `npm run setup:moto`; running it again is a no-op once the right version is there.
#
# Why moto and not MinIO: moto installs from PyPI in seconds (pure Python wheels), MinIO builds a
# 150 MB Go binary in minutes; both enforce conditional PutObject and neither enforces CopyObject's
# destination conditions (see docs/s3.md), so the tests put the same proxy in front of either.
# The exact versions of moto and everything it pulls in are pinned in scripts/moto/requirements.txt.
set -euo pipefail

readonly VERSION='5.2.5'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/scripts/moto/requirements.txt"
venv="${MOTO_INSTALL_VENV:-$root/.tools/moto}"
bin_dir="${MOTO_INSTALL_DIR:-$root/.tools/bin}"
bin="$bin_dir/moto_server"

log() { printf '[setup:moto] %s\n' "$*"; }
fail() { printf '[setup:moto] error: %s\n' "$*" >&2; exit 1; }

grep -qx "moto\[server\]==$VERSION" "$requirements" || fail "$requirements does not pin moto[server]==$VERSION; keep the script and the requirements in step"

# The version of moto in the venv a launcher runs (read from its exec line): a launcher installed
# elsewhere (a shared tools directory) counts as installed when its venv holds the pinned version.
installed_version() {
  local python
  python="$(sed -n 's/^exec "\([^"]*\)" -m moto.server.*/\1/p' "$1" 2>/dev/null || true)"
  [[ -n "$python" && -x "$python" ]] || return 0
  "$python" -c 'import importlib.metadata as m; print(m.version("moto"))' 2>/dev/null || true
}

if [[ -x "$bin" && "$(installed_version "$bin")" == "$VERSION" ]]; then
  log "moto $VERSION already installed at $bin; nothing to do"
  exit 0
fi
command -v python3 >/dev/null 2>&1 || fail 'python3 (3.9 or later, with venv) is needed to install moto'
log "installing moto[server]==$VERSION into $venv"
# Built where it lives (a venv names its own directory); an interrupted install fails the version
# check of the next run, which builds it again.
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
mkdir -p "$bin_dir"
# A launcher, not a symlink: the venv's console script has the venv's python in its shebang.
cat > "$bin.partial" <<LAUNCHER
#!/bin/sh
exec "$venv/bin/python" -m moto.server "\$@"
LAUNCHER
chmod 0755 "$bin.partial"
mv -f "$bin.partial" "$bin"
[[ "$(installed_version "$bin")" == "$VERSION" ]] || fail "installed, but the venv holds moto '$(installed_version "$bin")', not $VERSION"
log "installed: moto $VERSION at $bin"
