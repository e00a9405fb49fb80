#!/usr/bin/env bash
# Installs Apache Iceberg's REST catalog test server (org.apache.iceberg.rest.RESTCatalogServer, from
# Maven Central) and the jars it runs on into .tools/iceberg-rest/lib, where the Iceberg tests look
# for it (test/support/iceberg-rest-server.ts). Run it as `npm run setup:iceberg-rest`; running it
# again is a no-op while the installed jars were resolved from the same pom.
#
# Why this server: it is the Iceberg project's own implementation of the REST catalog API (the one
# its client tests run against), so a commit it accepts is one the spec's reference accepts. Apache
# Polaris, Lakekeeper and Nessie cannot be run from the registries reached here (see
# ../shared/notes/iceberg.md). Every version is pinned in scripts/iceberg-rest/pom.xml; the server's
# artifact declares no dependencies of its own, so the pom lists them (45 jars, ~85 MB).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/scripts/iceberg-rest/pom.xml"
dir="${ICEBERG_REST_INSTALL_DIR:-$root/.tools/iceberg-rest}"
stamp="$dir/lib/.pom.sha256"

log() { printf '[setup:iceberg-rest] %s\n' "$*"; }
fail() { printf '[setup:iceberg-rest] error: %s\n' "$*" >&2; exit 1; }

want="$(sha256sum "$pom" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  log "already installed at $dir/lib (from this pom); nothing to do"
  exit 0
fi
command -v java >/dev/null 2>&1 || fail 'java (17 or later: Jetty 12.1 and Iceberg 1.11 need it) is needed to run the server'
command -v mvn >/dev/null 2>&1 || fail 'mvn (Maven 3.6 or later) is needed to resolve the server jars'
java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p')"
[[ -n "$java_major" && "$java_major" -ge 17 ]] || fail "java 17 or later is needed; this is java '${java_major:-unknown}'"

log "resolving the server and its jars from $pom"
# Resolved into a directory beside the final one and moved into place whole: an interrupted run
# leaves no half-filled lib/ that a test would start.
rm -rf "$dir/lib.partial"
mkdir -p "$dir"
mvn --batch-mode --quiet -f "$pom" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$dir/lib.partial"
[[ -f "$dir/lib.partial/iceberg-open-api-1.11.0-test-fixtures.jar" ]] || fail 'maven finished but the server jar (iceberg-open-api test-fixtures) is not among the jars'
printf '%s\n' "$want" > "$dir/lib.partial/.pom.sha256"
rm -rf "$dir/lib"
mv "$dir/lib.partial" "$dir/lib"
log "installed: $(find "$dir/lib" -name '*.jar' | wc -l) jars in $dir/lib (java -cp '$dir/lib/*' org.apache.iceberg.rest.RESTCatalogServer)"
