#!/usr/bin/env bash
# Builds the testbed's control-plane binaries from Go modules (no release downloads).
# Called by test/testbed/build.ts, which handles locking, the stamp file and timing.
#
# Inputs (environment):
#   TB_ROOT        cache root for the testbed, e.g. ~/.cache/kube-renumber/testbed
#   K8S_VERSION    e.g. v1.35.4
#   ETCD_VERSION   e.g. v3.6.16
#   KWOK_VERSION   e.g. v0.7.0
#   DP_ROOT        the data plane's cache root (optional): while its build of K8S_VERSION is still to run,
#                  the Go build cache is kept for it
#   KUBE_RENUMBER_TESTBED_GOCACHE  a Go build cache of this build's own (optional; default $TB_ROOT/go/build-cache,
#                  shared by every build). A build that ends may trim the shared cache (go clean -cache), and
#                  npm test's build-all removes it at its end: a build of another version running beside them loses the
#                  compiled packages it has not linked yet ("could not import fmt (open …/build-cache/…-d: no such
#                  file or directory)", a v1.29.15 build of 2026-12-02 after 31 minutes), so a long build that others
#                  may overlap takes a cache of its own
# Output: $TB_ROOT/$K8S_VERSION/bin/{tbsup,etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kwok}
#
# Wrapper modules are generated under $TB_ROOT/$K8S_VERSION/src, never inside the checkout. The Go
# module cache and build cache live under $TB_ROOT/go so that the whole cost is in one directory.
set -euo pipefail

# Everything is inside main(), parsed before it runs: editing this file during a build is harmless.
main() {

: "${TB_ROOT:?}" "${K8S_VERSION:?}" "${ETCD_VERSION:?}" "${KWOK_VERSION:?}" "${KWOK_BUILD:?}"

VDIR="$TB_ROOT/$K8S_VERSION"
BIN="$VDIR/bin"
SRC="$VDIR/src"
mkdir -p "$BIN" "$SRC"

export GOMODCACHE="$TB_ROOT/go/mod"
export GOCACHE="${KUBE_RENUMBER_TESTBED_GOCACHE:-$TB_ROOT/go/build-cache}"
export GOPATH="$TB_ROOT/go/path"
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
unset GOBIN

log() { printf '[testbed build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# `go get` lists every module it downloads (hundreds of lines): keep that in a log, show it on failure.
quiet_go_get() {
  local name="$1"; shift
  local logf="$VDIR/go-get-$name.log"
  if ! go get "$@" > "$logf" 2>&1; then
    tail -n 60 "$logf" >&2
    echo "go get $* failed (full log: $logf)" >&2
    return 1
  fi
}

command -v go >/dev/null || { echo "the testbed is built from Go modules: install Go >= 1.25 (e.g. apt-get install golang-go, or go.dev toolchain)" >&2; exit 1; }

ver="${K8S_VERSION#v}"
major="${ver%%.*}"
rest="${ver#*.}"
minor="${rest%%.*}"
patch="${rest#*.}"
staging_ver="v0.${minor}.${patch}"

# ---------------------------------------------------------------------------- kubernetes
build_k8s() {
  local mod="$SRC/kubernetes"
  mkdir -p "$mod"
  cd "$mod"
  log "resolving k8s.io/kubernetes@$K8S_VERSION"
  local gomod
  # a module that needs a newer Go than this machine's: `go mod download` exits 1 with an "Error" (requires go >= …)
  # but has fetched its go.mod all the same, which says which toolchain to build it with (below)
  gomod="$(cd "$mod" && { GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" || true; } | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$gomod" ] || { echo "cannot find go.mod of k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
  local goline
  goline="$(grep -m1 '^go ' "$gomod")"
  # A version newer than this machine's Go (1.38 wants go >= 1.27) is built with the toolchain its go.mod names,
  # which the go command fetches from the module proxy (golang.org/toolchain); older ones with the local Go.
  local want have
  want="${goline#go }"
  have="$(go env GOVERSION)"; have="${have#go}"
  if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | tail -n1)" != "$have" ]; then
    export GOTOOLCHAIN="go$want"
    case "$want" in *.*.*) ;; *) export GOTOOLCHAIN="go$want.0" ;; esac
    log "k8s.io/kubernetes@$K8S_VERSION needs go >= $want (this machine: $have): building with $GOTOOLCHAIN from the module proxy"
  fi
  {
    echo "module kube-renumber.local/testbed/kubernetes"
    echo
    echo "$goline"
    echo
    grep -m1 '^godebug ' "$gomod" || true
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    # k8s.io/api => ./staging/src/k8s.io/api   ->   k8s.io/api => k8s.io/api v0.35.4
    sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/k8s\.io/[A-Za-z0-9._-]*[[:space:]]*$#\t\1 => \1 '"$staging_ver"'#p' "$gomod"
    echo ")"
  } > go.mod
  local n
  n="$(grep -c ' => ' go.mod)"
  log "wrapper module with $n staging replaces ($staging_ver)"
  [ "$n" -gt 20 ] || { echo "too few staging replaces derived from $gomod" >&2; exit 1; }

  local pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
              k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
  log "go get (downloads modules)"
  quiet_go_get kubernetes "${pkgs[@]/%/@$K8S_VERSION}"
  local now
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local ldf="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ldf="$ldf -X $p.gitTreeState=clean -X $p.buildDate=$now -X $p.gitCommit=0000000000000000000000000000000000000000"
  done
  log "go build ${pkgs[*]}"
  go build -trimpath -ldflags "$ldf" -o "$BIN/" "${pkgs[@]}"
}

# ---------------------------------------------------------------------------- etcd
# etcd and kwok do not depend on the Kubernetes version: each is built once per its own version into
# $TB_ROOT/shared/<name>/<version>/ and linked (or copied) into every Kubernetes version's bin directory.
from_shared() {
  local name="$1" version="$2"
  local shared="$TB_ROOT/shared/$name/$version/$name"
  if [ -x "$shared" ]; then
    log "$name $version: already built for another Kubernetes version, linked from $shared"
    ln -f "$shared" "$BIN/$name" 2>/dev/null || cp -f "$shared" "$BIN/$name"
    return 0
  fi
  return 1
}

to_shared() {
  local name="$1" version="$2"
  mkdir -p "$TB_ROOT/shared/$name/$version"
  ln -f "$BIN/$name" "$TB_ROOT/shared/$name/$version/$name" 2>/dev/null || cp -f "$BIN/$name" "$TB_ROOT/shared/$name/$version/$name"
}

build_etcd() {
  from_shared etcd "$ETCD_VERSION" && return 0
  local mod="$SRC/etcd"
  mkdir -p "$mod"
  cd "$mod"
  cat > go.mod <<EOF
module kube-renumber.local/testbed/etcd

go 1.25
EOF
  log "go get go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  quiet_go_get etcd "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  log "go build etcd"
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
  to_shared etcd "$ETCD_VERSION"
}

# ---------------------------------------------------------------------------- kwok
# One patch, applied to a copy of the module source: kwok deletes a pod by name only (grace 0, no precondition), so
# a delete it queued for a pod that is gone can delete a new pod of the same name, e.g. a bare pod the tool has just
# created again. A kubelet deletes with the pod's UID as precondition "to prevent deleting a newly created pod with
# the same name and namespace" (pkg/kubelet/status/status_manager.go); the patched kwok does the same. The shared
# copy is named by KWOK_BUILD (the version and the patch), so an unpatched build is never reused.
patch_kwok() {
  local f="$1/pkg/kwok/controllers/pod_controller.go"
  local old='	err := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteOpt)'
  local new='	opt := deleteOpt
	opt.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))
	err := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opt)'
  grep -qF "$old" "$f" || { echo "kwok patch does not apply: $f has no line: $old" >&2; exit 1; }
  OLD="$old" NEW="$new" perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$f"
  grep -qF 'metav1.NewUIDPreconditions(string(pod.UID))' "$f" || { echo "kwok patch failed: $f" >&2; exit 1; }
  log "patched kwok's pod_controller.go: a pod is deleted with its UID as precondition, as a kubelet deletes it"
}

# A second patch, to its node lease controller: kwok renews a node's Lease from a delay queue keyed by the node's
# name, and nothing keeps a name in that queue once. A renewal already handed to a worker when the Node is deleted
# survives the delete (ReleaseHold cancels only what is still delayed) and, once the Node is registered again under
# that name, runs beside the renewal the new hold queues: from then on the node has two renewals that each queue
# themselves again, and more follow. Seen on a 1,000-node run (2026-11-29): tb-node-163, registered again at
# 15:47:28, renewed its Lease 2 to 5 times every 10 s, all but one failing with a conflict. The queue's heap
# (pkg/utils/heap) indexes an item once, so a second entry for a name leaves the first behind where Cancel cannot
# reach it, and once due it blocks the heap for good: from 15:47:38 on kwok renewed no other node's Lease.
# Patched: one worker at a time syncs a node (another that gets the same name drops it: the first queues it
# again), and a worker cancels the node's queued renewal before it queues the next, so a name is queued once.
patch_kwok_lease() {
  local f="$1/pkg/kwok/controllers/node_lease_controller.go"
  local -a olds news
  olds[0]='	holdLeaseSet maps.SyncMap[string, bool]'
  news[0]='	holdLeaseSet maps.SyncMap[string, bool]
	syncing      maps.SyncMap[string, bool]'
  olds[1]='		first, ok := c.holdLeaseSet.Load(nodeName)
		if !ok {
			continue
		}
'
  news[1]='		first, ok := c.holdLeaseSet.Load(nodeName)
		if !ok {
			continue
		}
		if _, busy := c.syncing.LoadOrStore(nodeName, true); busy {
			continue
		}
'
  olds[2]='			c.delayQueue.AddWeightAfter(nodeName, 1, dur)'
  news[2]='			c.requeue(nodeName, 1, dur)'
  olds[3]='		c.delayQueue.AddWeightAfter(nodeName, 2, nextTry)'
  news[3]='		c.requeue(nodeName, 2, nextTry)'
  olds[4]='func (c *NodeLeaseController) interval() time.Duration {'
  news[4]='// requeue queues the next sync of nodeName in place of any still queued, then lets another worker sync it.
func (c *NodeLeaseController) requeue(nodeName string, weight int, after time.Duration) {
	_ = c.delayQueue.Cancel(nodeName)
	c.delayQueue.AddWeightAfter(nodeName, weight, after)
	c.syncing.Delete(nodeName)
}

func (c *NodeLeaseController) interval() time.Duration {'
  local i
  for i in 0 1 2 3 4; do
    grep -qF "${olds[$i]%%$'\n'*}" "$f" || { echo "kwok lease patch does not apply: $f has no line: ${olds[$i]%%$'\n'*}" >&2; exit 1; }
    OLD="${olds[$i]}" NEW="${news[$i]}" perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/g' "$f"
  done
  # every renewal the sync worker queues goes through requeue (it frees the node for the next worker)
  [ "$(grep -c 'c.delayQueue.AddWeightAfter' "$f")" = 1 ] && [ "$(grep -c 'c.requeue(nodeName' "$f")" = 3 ] \
    && grep -qF 'c.syncing.LoadOrStore(nodeName, true)' "$f" \
    || { echo "kwok lease patch failed: $f" >&2; exit 1; }
  log "patched kwok's node_lease_controller.go: a node's Lease renewal is queued once and synced by one worker at a time"
}

build_kwok() {
  from_shared kwok "$KWOK_BUILD" && return 0
  local mod="$SRC/kwok"
  rm -rf "$mod"
  mkdir -p "$mod"
  cd "$mod"
  log "go mod download sigs.k8s.io/kwok@$KWOK_VERSION"
  local json dir
  json="$(GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION")"
  dir="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir" ] || { echo "cannot download sigs.k8s.io/kwok@$KWOK_VERSION" >&2; exit 1; }
  cp -r "$dir" "$mod/kwok-src"
  chmod -R u+w "$mod/kwok-src"
  patch_kwok "$mod/kwok-src"
  patch_kwok_lease "$mod/kwok-src"
  cat > go.mod <<EOF
module kube-renumber.local/testbed/kwok

go 1.25

require sigs.k8s.io/kwok $KWOK_VERSION

replace sigs.k8s.io/kwok => ./kwok-src
EOF
  log "go get sigs.k8s.io/kwok/cmd/kwok (patched $KWOK_VERSION)"
  # at its version: without one, go get takes the newest kwok's version for the module the replace stands for
  quiet_go_get kwok "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  log "go build kwok"
  go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" -o "$BIN/kwok" sigs.k8s.io/kwok/cmd/kwok
  to_shared kwok "$KWOK_BUILD"
  rm -rf "$mod/kwok-src"
}

# ---------------------------------------------------------------------------- tbsup (our supervisor)
build_sup() {
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  log "go build tbsup"
  cd "$here/supervisor"
  GOFLAGS=-buildvcs=false GO111MODULE=on go build -trimpath -ldflags "-s -w" -o "$BIN/tbsup" main.go
}

want="${1:-all}"
case "$want" in
  all)
    build_sup; build_etcd; build_kwok; build_k8s
    # The build cache (~3.9 GB for v1.35.4) only speeds up a rebuild; the stamp prevents rebuilds. The data-plane
    # build of the same version compiles kube-proxy from the same k8s.io packages with this cache, so it stays
    # until that build has run too (the data-plane build removes it then).
    if [ -n "${DP_ROOT:-}" ] && [ ! -f "$DP_ROOT/$K8S_VERSION/stamp.json" ]; then
      log "build cache: $(du -sh "$GOCACHE" | cut -f1), kept for the data-plane build of $K8S_VERSION, which removes it"
    elif [ "${KUBE_RENUMBER_TESTBED_KEEP_GOCACHE:-0}" != 1 ]; then
      log "build cache: $(du -sh "$GOCACHE" | cut -f1), removing it (KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1 keeps it)"
      du -sb "$GOCACHE" | cut -f1 > "$VDIR/gocache-bytes-before-trim"
      go clean -cache
    fi
    ;;
  sup)  build_sup ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  k8s)  build_k8s ;;
  *) echo "unknown target $want" >&2; exit 2 ;;
esac
log "done: $(ls "$BIN" | tr '\n' ' ')"
}

# one line, parsed whole before main runs: a build script edited during a build still exits cleanly
main "$@"; exit $?
