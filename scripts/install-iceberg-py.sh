#!/usr/bin/env bash
# Installs the Iceberg tests' independent readers into a venv under .tools/iceberg-py: pyiceberg
# 0.12.0 (its SQL catalog on PostgreSQL or SQLite, its REST catalog, pyarrow), DuckDB 1.4.4 with the
# iceberg and avro extensions from their PyPI wheels, and fastavro. test/support/iceberg-readers.ts
# runs test/support/iceberg_read.py with the venv's python. Run it as `npm run setup:iceberg-py`;
# running it again is a no-op while the venv was built from the same requirements file.
#
# Every version, down to the last transitive one, is pinned in scripts/iceberg-py/requirements.txt.
# DuckDB must stay at exactly 1.4.4: the extension files of the duckdb-ext-* wheels do not load in
# another version, and DuckDB's own extension server is not reachable from here or from CI.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/scripts/iceberg-py/requirements.txt"
venv="${ICEBERG_PY_INSTALL_VENV:-$root/.tools/iceberg-py}"
stamp="$venv/.requirements.sha256"

log() { printf '[setup:iceberg-py] %s\n' "$*"; }
fail() { printf '[setup:iceberg-py] error: %s\n' "$*" >&2; exit 1; }

grep -qx 'duckdb==1.4.4' "$requirements" || fail "$requirements does not pin duckdb==1.4.4, the one version its extension wheels load in"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" ]]; then
  log "already installed at $venv (from these requirements); nothing to do"
  exit 0
fi
command -v python3 >/dev/null 2>&1 || fail 'python3 (3.9 or later, with venv) is needed to install the Iceberg readers'
log "installing pyiceberg, duckdb and its iceberg extension into $venv"
# Built where it lives (a venv names its own directory); the stamp is written last, so an
# interrupted install is built again by the next run.
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
"$venv/bin/python" - <<'PY' || fail 'installed, but the readers do not import, or the iceberg or httpfs extension does not load'
import duckdb, duckdb_ext, os, pyiceberg, fastavro  # noqa: F401
ext = os.path.join(list(duckdb_ext.__path__)[0], 'extensions')  # a namespace package: no __file__
con = duckdb.connect(config={'extension_directory': ext, 'autoinstall_known_extensions': False})
con.execute('LOAD iceberg')
con.execute('LOAD httpfs')  # s3:// tables (test/sinks/iceberg/table-stores.test.ts)
PY
printf '%s\n' "$want" > "$stamp"
log "installed: $("$venv/bin/python" -c 'import pyiceberg, duckdb; print("pyiceberg", pyiceberg.__version__, "duckdb", duckdb.__version__)') in $venv"
