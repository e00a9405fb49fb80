#!/usr/bin/env bash
# The peers' bench (npm run bench -- --peers) needs dlt and Airbyte's CDK: a Python venv at
# .tools/peers-venv (gitignored) with bench/peers/requirements.txt, from PyPI. Bench-only: nothing
# else in tilehouse, its tests or CI uses Python for this.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.tools/peers-venv
if ! command -v python3 > /dev/null; then
  echo "bench/peers/setup.sh: python3 not found (3.10-3.14 with the venv module: e.g. apt-get install python3-venv)" >&2
  exit 2
fi
if ! python3 -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 14) else 1)'; then
  echo "bench/peers/setup.sh: python3 is $(python3 -V 2>&1); dlt 1.31 and airbyte-cdk 7.39 need 3.10-3.14" >&2
  exit 2
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/peers/requirements.txt
echo "bench/peers/setup.sh: $("$venv/bin/python" -c "import importlib.metadata as m; print('dlt', m.version('dlt') + ', airbyte-cdk', m.version('airbyte-cdk'))") in $venv"
