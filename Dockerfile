# syntax=docker/dockerfile:1
# tilehouse image: the compiled CLI and its production dependencies, nothing else. Job files and the
# environment config are not baked in: Kubernetes mounts them from ConfigMaps (k8s/), at the paths
# TILEHOUSE_JOBS and TILEHOUSE_CONFIG name below.
#   docker build -t tilehouse .
#   docker run --rm -v "$PWD/jobs:/etc/tilehouse/jobs:ro" -v "$PWD/config:/etc/tilehouse/config:ro" tilehouse validate

# --- build: every dependency (TypeScript, esbuild); type-check and bundle src/ to dist/bundle/ ---
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
RUN npm run build

# --- runtime: production dependencies only, the compiled output, a non-root user ---
FROM node:24.21.0-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/bundle ./dist/bundle
# /app stays owned by root: the process can read its code but not change it. The pod also runs with
# a read-only root filesystem; temp files go to TMPDIR (an emptyDir on Kubernetes).
# Node's flags, written once in src/node-flags.ts (a test holds these equal to it; npm run bench reads
# them from this file). Started with them, tilehouse does not relaunch itself (bin/tilehouse.js and a
# bundle started without them do, once). Why each (measured, bench/README.md):
# - --max-old-space-size=2048: Node sizes V8's heap from the container's memory limit, and a small
#   ceiling makes V8 collect every few MB: ~30% more CPU per row. 2048 keeps the large-heap mode.
# - --max-semi-space-size=8: Node 24's V8 grows the young generation to 3 x 64 MB (Node 20's:
#   3 x 16 MB), and a run's garbage fills it: +100 MB peak RSS at 1M rows for no CPU gained.
# - --liftoff-only (ENTRYPOINT: NODE_OPTIONS may not carry it): undici's HTTP parser is WebAssembly,
#   and optimizing it with TurboFan costs ~20 MB RSS at start-up; its baseline code parses as fast here.
# - --heap-growing-percent=200 (ENTRYPOINT, likewise): the old generation grows to 3x what survived
#   the last full collection instead of V8's up to 4x, mostly garbage: 1M rows -17 MB, CPU +2-3 %.
ENV NODE_OPTIONS="--max-old-space-size=2048 --max-semi-space-size=8" \
    TILEHOUSE_CONFIG=/etc/tilehouse/config/default.yaml \
    TILEHOUSE_JOBS=/etc/tilehouse/jobs \
    TMPDIR=/tmp
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd lookup.
USER 10001:10001
# node runs as PID 1 without an init: tilehouse handles SIGTERM/SIGINT itself (clean stop, exit
# 143/130) and starts no child processes to reap.
ENTRYPOINT ["node", "--liftoff-only", "--heap-growing-percent=200", "/app/dist/bundle/tilehouse.js"]
CMD ["run"]
