#!/usr/bin/env bash
# Installs Spark for the Iceberg tests' interop checks into .tools/iceberg-spark: pyspark 3.5.9 from
# PyPI in a venv of its own (venv/; Spark's jars come inside the wheel) and, from Maven, Apache
# Iceberg's Spark runtime 1.10.1 (Spark 3.5, Scala 2.12), its AWS bundle (S3FileIO, for s3:// tables)
# and the PostgreSQL JDBC driver (jars/).
# test/support/iceberg-spark.ts runs test/support/iceberg_spark.py with the venv's python and those
# jars. Run it as `npm run setup:iceberg-spark`; running it again is a no-op while the install was
# made from the same requirements file and pom.
#
# A venv of its own, not the readers' (.tools/iceberg-py): pyspark's ~320 MB and its py4j pin stay
# out of the venv every Iceberg test uses, and either can be rebuilt without the other.
# Every version is pinned: scripts/iceberg-spark/requirements.txt and scripts/iceberg-spark/pom.xml.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/scripts/iceberg-spark/requirements.txt"
pom="$root/scripts/iceberg-spark/pom.xml"
dir="${ICEBERG_SPARK_INSTALL_DIR:-$root/.tools/iceberg-spark}"
stamp="$dir/.install.sha256"
runtime_jar='iceberg-spark-runtime-3.5_2.12-1.10.1.jar'
aws_jar='iceberg-aws-bundle-1.10.1.jar'

log() { printf '[setup:iceberg-spark] %s\n' "$*"; }
fail() { printf '[setup:iceberg-spark] error: %s\n' "$*" >&2; exit 1; }

want="$(cat "$requirements" "$pom" | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dir/venv/bin/python" && -f "$dir/jars/$runtime_jar" && -f "$dir/jars/$aws_jar" ]]; then
  log "already installed at $dir (from these requirements and pom); nothing to do"
  exit 0
fi
command -v python3 >/dev/null 2>&1 || fail 'python3 (3.8 or later, with venv) is needed to install pyspark'
command -v java >/dev/null 2>&1 || fail 'java (17: Spark 3.5 runs on 8, 11 or 17) is needed to run Spark'
command -v mvn >/dev/null 2>&1 || fail 'mvn (Maven 3.6 or later) is needed to resolve the Iceberg runtime jar'
java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p')"
[[ -n "$java_major" && "$java_major" -ge 17 ]] || fail "java 17 is needed; this is java '${java_major:-unknown}'"

# The stamp goes first and is written last: an interrupted install is made again by the next run.
mkdir -p "$dir"
rm -f "$stamp"

log "resolving the Iceberg Spark runtime and the PostgreSQL driver from $pom"
# Into a directory beside the final one, moved into place whole. Only the pom's three jars: the
# driver's one transitive dependency (checker-qual, annotations) is not needed to run it.
rm -rf "$dir/jars.partial"
mvn --batch-mode --quiet -f "$pom" dependency:copy-dependencies \
  -DincludeScope=runtime -DexcludeTransitive=true -DoutputDirectory="$dir/jars.partial"
[[ -f "$dir/jars.partial/$runtime_jar" && -f "$dir/jars.partial/$aws_jar" ]] || fail "maven finished but $runtime_jar or $aws_jar is not among the jars"
rm -rf "$dir/jars"
mv "$dir/jars.partial" "$dir/jars"

log "installing pyspark into $dir/venv"
# Built where it lives (a venv names its own directory).
rm -rf "$dir/venv"
python3 -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir -r "$requirements"
"$dir/venv/bin/python" -c 'import pyspark, py4j; assert pyspark.__version__ == "3.5.9", pyspark.__version__' \
  || fail 'installed, but pyspark 3.5.9 does not import'

printf '%s\n' "$want" > "$stamp"
log "installed: pyspark $("$dir/venv/bin/python" -c 'import pyspark; print(pyspark.__version__)'), $(ls "$dir/jars" | tr '\n' ' ')in $dir ($(du -sh "$dir" | cut -f1))"
