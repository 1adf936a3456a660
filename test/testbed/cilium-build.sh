#!/usr/bin/env bash
# Builds cilium-operator-generic (the operator with only the cluster-pool / multi-pool / kubernetes IPAM
# allocators) from the Go module github.com/cilium/cilium, no release download. Called by
# test/testbed/cilium-build.ts, which handles locking, the stamp file and timing.
#
# Inputs (environment):
#   CILIUM_ROOT     cache root for Cilium, e.g. ~/.cache/kube-renumber/cilium
#   TB_ROOT         the control plane's cache root (its Go module cache is shared, read and extended)
#   CILIUM_VERSION  e.g. v1.20.2
# Output: $CILIUM_ROOT/$CILIUM_VERSION/bin/cilium-operator-generic
#
# Build tags and flags follow Cilium's own operator/Makefile (target cilium-operator-generic:
# GO_TAGS_FLAGS += ipam_provider_operator) and Makefile.defs (GO_TAGS_FLAGS += osusergo, CGO_ENABLED=0,
# -X pkg/version.ciliumVersion, -s -w).
set -euo pipefail

main() {

: "${CILIUM_ROOT:?}" "${TB_ROOT:?}" "${CILIUM_VERSION:?}"

VDIR="$CILIUM_ROOT/$CILIUM_VERSION"
BIN="$VDIR/bin"
SRC="$VDIR/src"
mkdir -p "$BIN" "$SRC"

export GOMODCACHE="$TB_ROOT/go/mod"
export GOCACHE="${KUBE_RENUMBER_GOCACHE:-$CILIUM_ROOT/go/build-cache}"
export GOPATH="$CILIUM_ROOT/go/path"
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
unset GOBIN

log() { printf '[cilium build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v go >/dev/null || { echo "cilium-operator is built from its Go module: install Go >= 1.26" >&2; exit 1; }

build_operator() {
  local mod="$SRC/operator"
  mkdir -p "$mod"
  cd "$mod"
  log "resolving github.com/cilium/cilium@$CILIUM_VERSION"
  local gomod
  gomod="$(GOFLAGS=-mod=mod go mod download -json "github.com/cilium/cilium@$CILIUM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$gomod" ] || { echo "cannot find go.mod of github.com/cilium/cilium@$CILIUM_VERSION" >&2; exit 1; }
  # Replace directives of a dependency are ignored by Go: carry Cilium's own (module => module version) over.
  {
    echo "module kube-renumber.local/cilium/operator"
    echo
    grep -m1 '^go ' "$gomod"
    echo
    echo "require github.com/cilium/cilium $CILIUM_VERSION"
    echo
    # both forms: `replace a => b v1` and a `replace ( ... )` block; local-path replaces (=> ./x) are skipped
    awk '/^replace[[:space:]]*\($/ { blk = 1; next }
         blk && /^\)/ { blk = 0; next }
         { line = $0; sub(/^replace[[:space:]]+/, "", line) }
         (blk || /^replace[[:space:]]/) && line ~ /^[[:space:]]*[^ ]+ => [^ .\/][^ ]* v[^ ]*[[:space:]]*$/ { gsub(/^[[:space:]]+/, "", line); print "replace " line }' "$gomod"
  } > go.mod
  log "go get github.com/cilium/cilium/operator@$CILIUM_VERSION"
  local logf="$VDIR/go-get-operator.log"
  if ! go get "github.com/cilium/cilium/operator@$CILIUM_VERSION" > "$logf" 2>&1; then
    tail -n 60 "$logf" >&2
    echo "go get failed (full log: $logf)" >&2
    return 1
  fi
  log "go build cilium-operator-generic (tags osusergo,ipam_provider_operator)"
  go build -trimpath -tags osusergo,ipam_provider_operator \
    -ldflags "-s -w -X github.com/cilium/cilium/pkg/version.ciliumVersion=${CILIUM_VERSION#v}" \
    -o "$BIN/cilium-operator-generic" github.com/cilium/cilium/operator
}

build_operator
if [ "${KUBE_RENUMBER_TESTBED_KEEP_GOCACHE:-0}" != 1 ]; then
  du -sb "$GOCACHE" | cut -f1 > "$VDIR/gocache-bytes-before-trim"
  log "build cache: $(du -sh "$GOCACHE" | cut -f1), removing it (KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1 keeps it)"
  go clean -cache
fi
log "done: $(ls "$BIN" | tr '\n' ' ')"
}

# one line, parsed whole before main runs: a build script edited during a build still exits cleanly
main "$@"; exit $?
