#!/usr/bin/env bash
# Builds the testbed's real kubelet and its CRI stand-in from Go modules (no release downloads): kubelet from
# k8s.io/kubernetes (cmd/kubelet) and fakecri (test/testbed/fakecri/main.go, around k8s.io/cri-client/pkg/fake),
# both in one generated wrapper module, so they share the k8s.io versions. Called by
# test/testbed/kubelet-build.ts, which handles locking, the stamp file and timing.
#
# Inputs (environment):
#   KL_ROOT      cache root for the kubelet, e.g. ~/.cache/kube-renumber/kubelet
#   TB_ROOT      the control plane's cache root (its Go module cache and build cache are shared)
#   K8S_VERSION  e.g. v1.37.2
# Output: $KL_ROOT/$K8S_VERSION/bin/{kubelet,fakecri}
#
# The Go build cache is the testbed's ($TB_ROOT/go/build-cache, or KUBE_RENUMBER_GOCACHE when `build-all` set one for
# its run) and the Go module cache is the testbed's ($TB_ROOT/go/mod): the k8s.io packages the control plane and
# kube-proxy compiled with the same flags are not compiled again. Neither is removed here: this build runs only
# when a test needs a real kubelet.
set -euo pipefail

main() {

: "${KL_ROOT:?}" "${TB_ROOT:?}" "${K8S_VERSION:?}"

VDIR="$KL_ROOT/$K8S_VERSION"
BIN="$VDIR/bin"
MOD="$VDIR/src/kubelet"
mkdir -p "$BIN" "$MOD/fakecri"

export GOMODCACHE="$TB_ROOT/go/mod"
export GOCACHE="${KUBE_RENUMBER_GOCACHE:-$TB_ROOT/go/build-cache}"
export GOPATH="$KL_ROOT/go/path"
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
unset GOBIN

log() { printf '[kubelet build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v go >/dev/null || { echo "the kubelet is built from Go modules: install Go >= 1.26" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ver="${K8S_VERSION#v}"
major="${ver%%.*}"
rest="${ver#*.}"
minor="${rest%%.*}"
patch="${rest#*.}"
staging_ver="v0.${minor}.${patch}"

cd "$MOD"
log "resolving k8s.io/kubernetes@$K8S_VERSION"
gomod="$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[ -f "$gomod" ] || { echo "cannot find go.mod of k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
{
  echo "module kube-renumber.local/testbed/kubelet"
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
n="$(grep -c ' => ' go.mod)"
[ "$n" -gt 20 ] || { echo "too few staging replaces derived from $gomod" >&2; exit 1; }
cp "$here/fakecri/main.go" fakecri/main.go

logf="$VDIR/go-get.log"
log "go get k8s.io/kubernetes/cmd/kubelet ($n staging replaces, $staging_ver)"
if ! go get "k8s.io/kubernetes/cmd/kubelet@$K8S_VERSION" "k8s.io/cri-client@$staging_ver" > "$logf" 2>&1; then
  tail -n 60 "$logf" >&2
  echo "go get failed (full log: $logf)" >&2
  exit 1
fi

now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ldf="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  ldf="$ldf -X $p.gitTreeState=clean -X $p.buildDate=$now -X $p.gitCommit=0000000000000000000000000000000000000000"
done
log "go build fakecri"
go build -trimpath -ldflags "-s -w" -o "$BIN/fakecri" ./fakecri
log "go build kubelet"
go build -trimpath -ldflags "$ldf" -o "$BIN/kubelet" k8s.io/kubernetes/cmd/kubelet
log "done: $(ls "$BIN" | tr '\n' ' '); build cache $GOCACHE: $(du -sh "$GOCACHE" | cut -f1)"
}

# one line, parsed whole before main runs: a build script edited during a build still exits cleanly
main "$@"; exit $?
