# Sourced by the install-*.sh scripts: builds one Go tool from a committed module (go.mod + go.sum
# in scripts/<tool>/) into a bin directory. Building from a committed module needs only the pinned
# module versions from the Go module proxy, never its @v/list (which `go install pkg@version` asks
# for and some networks refuse), and it makes the build reproducible.
#
#   build_go_tool NAME MODULE_DIR BIN PACKAGE LDFLAGS
#
# The binary is built beside BIN and renamed, so an interrupted build never leaves a half-written
# file that a later run (or a test) would take for the real one. -mod=readonly fails instead of
# silently resolving other versions than go.sum pins. CGO_ENABLED=0: pure Go, no C toolchain.
build_go_tool() {
  local name="$1" module_dir="$2" bin="$3" package="$4" ldflags="$5"
  if ! command -v go >/dev/null 2>&1; then
    printf '[setup:%s] error: the Go toolchain is needed to build %s (https://go.dev/dl/); go.mod asks for %s\n' \
      "$name" "$name" "$(sed -n 's/^go //p' "$module_dir/go.mod")" >&2
    return 1
  fi
  mkdir -p "$(dirname "$bin")"
  local partial
  partial="$(mktemp "$(dirname "$bin")/.$name.XXXXXX")"
  # shellcheck disable=SC2064 # expand $partial now: the trap runs after this function returned
  trap "rm -f '$partial'" EXIT
  printf '[setup:%s] building %s with %s into %s\n' "$name" "$package" "$(go version | cut -d' ' -f3)" "$bin"
  local started=$SECONDS
  (cd "$module_dir" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$partial" "$package")
  chmod 0755 "$partial"
  mv -f "$partial" "$bin"
  trap - EXIT
  printf '[setup:%s] built in %ss\n' "$name" "$((SECONDS - started))"
}
