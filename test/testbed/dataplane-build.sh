#!/usr/bin/env bash
# Builds the testbed's data-plane binaries from Go modules (no release downloads): kube-proxy, CoreDNS and
# dpnet (our small forwarder / HTTP server / DNS client). Called by test/testbed/dataplane-build.ts, which
# handles locking, the stamp file and timing.
#
# Inputs (environment):
#   DP_ROOT          cache root for the data plane, e.g. ~/.cache/kube-renumber/dataplane
#   TB_ROOT          the control plane's cache root (its Go module cache is shared, read and extended)
#   K8S_VERSION      e.g. v1.35.4
#   COREDNS_VERSION  e.g. v1.15.0
# Output: $DP_ROOT/$K8S_VERSION/bin/{kube-proxy,coredns,dpnet}
#
# The control plane's bin directory and stamp are never touched. The Go module cache ($TB_ROOT/go/mod) and
# build cache ($TB_ROOT/go/build-cache) are shared, so neither modules nor packages the control-plane build of
# this version fetched and compiled are fetched or compiled again; the build cache is removed after this build
# when the control plane of this version is built (else that build will use it and remove it).
set -euo pipefail

main() {

: "${DP_ROOT:?}" "${TB_ROOT:?}" "${K8S_VERSION:?}" "${COREDNS_VERSION:?}"

VDIR="$DP_ROOT/$K8S_VERSION"
BIN="$VDIR/bin"
SRC="$VDIR/src"
mkdir -p "$BIN" "$SRC"

export GOMODCACHE="$TB_ROOT/go/mod"
# The control plane's build cache: kube-proxy is compiled from the same k8s.io packages as kube-apiserver and
# kube-controller-manager, which the control-plane build of this version leaves there for this build.
export GOCACHE="$TB_ROOT/go/build-cache"
export GOPATH="$DP_ROOT/go/path"
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
unset GOBIN

log() { printf '[dataplane build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

quiet_go_get() {
  local name="$1"; shift
  local logf="$VDIR/go-get-$name.log"
  if ! go get "$@" > "$logf" 2>&1; then
    tail -n 60 "$logf" >&2
    echo "go get $* failed (full log: $logf)" >&2
    return 1
  fi
}

command -v go >/dev/null || { echo "the data plane is built from Go modules: install Go >= 1.26" >&2; exit 1; }

ver="${K8S_VERSION#v}"
major="${ver%%.*}"
rest="${ver#*.}"
minor="${rest%%.*}"
patch="${rest#*.}"
staging_ver="v0.${minor}.${patch}"

build_proxy() {
  local mod="$SRC/kube-proxy"
  mkdir -p "$mod"
  cd "$mod"
  log "resolving k8s.io/kubernetes@$K8S_VERSION"
  local gomod
  gomod="$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$gomod" ] || { echo "cannot find go.mod of k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
  {
    echo "module kube-renumber.local/dataplane/kube-proxy"
    echo
    grep -m1 '^go ' "$gomod"
    echo
    grep -m1 '^godebug ' "$gomod" || true
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/k8s\.io/[A-Za-z0-9._-]*[[:space:]]*$#\t\1 => \1 '"$staging_ver"'#p' "$gomod"
    echo ")"
  } > go.mod
  local n
  n="$(grep -c ' => ' go.mod)"
  [ "$n" -gt 20 ] || { echo "too few staging replaces derived from $gomod" >&2; exit 1; }
  log "go get k8s.io/kubernetes/cmd/kube-proxy ($n staging replaces, $staging_ver)"
  quiet_go_get kube-proxy "k8s.io/kubernetes/cmd/kube-proxy@$K8S_VERSION"
  local now ldf="-s -w"
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ldf="$ldf -X $p.gitTreeState=clean -X $p.buildDate=$now -X $p.gitCommit=0000000000000000000000000000000000000000"
  done
  log "go build kube-proxy"
  go build -trimpath -ldflags "$ldf" -o "$BIN/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy
}

build_coredns() {
  local mod="$SRC/coredns"
  mkdir -p "$mod"
  cd "$mod"
  local gomod
  gomod="$(GOFLAGS=-mod=mod go mod download -json "github.com/coredns/coredns@$COREDNS_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$gomod" ] || { echo "cannot find go.mod of github.com/coredns/coredns@$COREDNS_VERSION" >&2; exit 1; }
  {
    echo "module kube-renumber.local/dataplane/coredns"
    echo
    grep -m1 '^go ' "$gomod"
    echo
    echo "require github.com/coredns/coredns $COREDNS_VERSION"
  } > go.mod
  log "go get github.com/coredns/coredns@$COREDNS_VERSION"
  quiet_go_get coredns "github.com/coredns/coredns@$COREDNS_VERSION"
  log "go build coredns"
  go build -trimpath -ldflags "-s -w" -o "$BIN/coredns" github.com/coredns/coredns
}

build_dpnet() {
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  log "go build dpnet"
  cd "$here/dpnet"
  GOFLAGS=-buildvcs=false GO111MODULE=on go build -trimpath -ldflags "-s -w" -o "$BIN/dpnet" main.go
}

want="${1:-all}"
case "$want" in
  all)
    build_dpnet; build_proxy; build_coredns
    if [ ! -f "$TB_ROOT/$K8S_VERSION/stamp.json" ]; then
      log "build cache: $(du -sh "$GOCACHE" | cut -f1), kept for the control-plane build of $K8S_VERSION, which removes it"
    elif [ "${KUBE_RENUMBER_TESTBED_KEEP_GOCACHE:-0}" != 1 ]; then
      du -sb "$GOCACHE" | cut -f1 > "$VDIR/gocache-bytes-before-trim"
      log "build cache: $(du -sh "$GOCACHE" | cut -f1), removing it (KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1 keeps it)"
      go clean -cache
    fi
    ;;
  dpnet)   build_dpnet ;;
  proxy)   build_proxy ;;
  coredns) build_coredns ;;
  *) echo "unknown target $want" >&2; exit 2 ;;
esac
log "done: $(ls "$BIN" | tr '\n' ' ')"
}

# one line, parsed whole before main runs: a build script edited during a build still exits cleanly
main "$@"; exit $?
