#!/usr/bin/env bash
# Builds Calico's own binaries from the Go module github.com/projectcalico/calico (the monorepo, served by the Go
# proxy only as a pseudo-version), no release download. Called by test/testbed/calico-build.ts, which handles
# locking, the stamp file and timing. Two targets:
#
#   ipam (the default; `npm test`'s build): the calico-ipam CNI plugin, calico-kube-controllers and calicoctl,
#        with the CRDs of the same commit.
#   dataplane (`npm run test:full` and the bench only): calico-node (node/cmd/calico-node), the binary Calico's
#        calico/node image runs as felix (`calico-node -felix`, felix/daemon), the start-up routine
#        (`-startup`) and the VXLAN tunnel address allocator (`-allocate-tunnel-addrs`). CGO_ENABLED=0 as for
#        every binary here: felix's BPF part (libbpf, cgo) is then stubbed (felix/bpf/*_stub.go, `!cgo`), which
#        the iptables data plane does not use; felix/Makefile and node/Makefile build the same way (CGO_ENABLED=0)
#        on every architecture but amd64 and arm64.
#
# Inputs (environment):
#   CALICO_ROOT         cache root for Calico, e.g. ~/.cache/kube-renumber/calico
#   TB_ROOT             the control plane's cache root (its Go module cache is shared, read and extended)
#   CALICO_VERSION      the monorepo's module version
#   CALICO_API_VERSION  the github.com/projectcalico/api module version used in place of the monorepo's ./api
# Output: ipam:      $CALICO_ROOT/$CALICO_VERSION/bin/{calico-ipam,calico-kube-controllers,calicoctl} and
#                    $CALICO_ROOT/$CALICO_VERSION/crds/ (the CRDs of the same commit, libcalico-go/config/crd)
#         dataplane: $CALICO_ROOT/$CALICO_VERSION/dataplane/bin/calico-node
#
# The monorepo's go.mod replaces github.com/projectcalico/api with ./api, which the module zip does not hold:
# the wrapper module (generated here, in the cache) replaces it with CALICO_API_VERSION and carries the
# monorepo's own module => module replaces (its k8s.io pins) over, since Go ignores a dependency's replaces.
# That api is one step newer than the monorepo: one comparison does not compile, and the copy of the source
# used through a replace gets the smallest patch that compiles (listed in docs/testbed.md; no IPAM code).
# Each target has its own source copy, wrapper module and build cache, so both may build at once.
set -euo pipefail

main() {

: "${CALICO_ROOT:?}" "${TB_ROOT:?}" "${CALICO_VERSION:?}" "${CALICO_API_VERSION:?}"
local target="${1:-ipam}"

VDIR="$CALICO_ROOT/$CALICO_VERSION"
case "$target" in
  ipam)
    OUT="$VDIR"
    export GOCACHE="${KUBE_RENUMBER_GOCACHE:-$CALICO_ROOT/go/build-cache}"
    ;;
  dataplane)
    OUT="$VDIR/dataplane"
    export GOCACHE="${KUBE_RENUMBER_GOCACHE:-$CALICO_ROOT/go/build-cache-dataplane}"
    ;;
  *) echo "unknown target $target (ipam or dataplane)" >&2; exit 2 ;;
esac
BIN="$OUT/bin"
SRC="$OUT/src"
mkdir -p "$BIN" "$SRC"

export GOMODCACHE="$TB_ROOT/go/mod"
export GOPATH="$CALICO_ROOT/go/path"
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
unset GOBIN

log() { printf '[calico build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v go >/dev/null || { echo "Calico is built from its Go module: install Go >= 1.24" >&2; exit 1; }

log "resolving github.com/projectcalico/calico@$CALICO_VERSION"
local json dir gomod
json="$(go mod download -json "github.com/projectcalico/calico@$CALICO_VERSION")"
dir="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
gomod="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[ -d "$dir" ] && [ -f "$gomod" ] || { echo "cannot download github.com/projectcalico/calico@$CALICO_VERSION" >&2; exit 1; }

# A writable copy of the module source, patched.
local copy="$SRC/calico"
rm -rf "$copy"
cp -r "$dir" "$copy"
chmod -R u+w "$copy"
patch_source "$copy"

# The CRDs of the same commit.
if [ "$target" = ipam ]; then
  rm -rf "$VDIR/crds"
  cp -r "$copy/libcalico-go/config/crd" "$VDIR/crds"
fi

local wrap="$SRC/wrap"
rm -rf "$wrap"
mkdir -p "$wrap"
cd "$wrap"
{
  echo "module kube-renumber.local/calico/build"
  echo
  grep -m1 '^go ' "$gomod"
  echo
  echo "require github.com/projectcalico/calico $CALICO_VERSION"
  echo
  echo "replace github.com/projectcalico/calico => ../calico"
  echo "replace github.com/projectcalico/api => github.com/projectcalico/api $CALICO_API_VERSION"
  # both forms: `replace a => b v1` and a `replace ( ... )` block; local-path replaces (=> ./x) are skipped
  awk '/^replace[[:space:]]*\($/ { blk = 1; next }
       blk && /^\)/ { blk = 0; next }
       { line = $0; sub(/^replace[[:space:]]+/, "", line) }
       (blk || /^replace[[:space:]]/) && line ~ /^[[:space:]]*[^ ]+ => [^ .\/][^ ]* v[^ ]*[[:space:]]*$/ { gsub(/^[[:space:]]+/, "", line); print "replace " line }' "$gomod"
} > go.mod

if [ "$target" = dataplane ]; then
  build_dataplane
else
  build_ipam
fi

if [ "${KUBE_RENUMBER_TESTBED_KEEP_GOCACHE:-0}" != 1 ]; then
  du -sb "$GOCACHE" | cut -f1 > "$OUT/gocache-bytes-before-trim"
  log "build cache: $(du -sh "$GOCACHE" | cut -f1), removing it (KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1 keeps it)"
  go clean -cache
fi
rm -rf "$copy" "$wrap"
log "done: $(ls "$BIN" | tr '\n' ' ')"
}

go_get() {
  local logf="$OUT/go-get.log"
  log "go get $*"
  if ! go get "$@" > "$logf" 2>&1; then
    tail -n 60 "$logf" >&2
    echo "go get failed (full log: $logf)" >&2
    return 1
  fi
}

build_ipam() {
  local pkgs=(
    "github.com/projectcalico/calico/cni-plugin/cmd/calico"
    "github.com/projectcalico/calico/kube-controllers/cmd/kube-controllers"
    "github.com/projectcalico/calico/calicoctl/calicoctl"
  )
  go_get "${pkgs[@]}"
  # One binary holds the calico CNI plugin and calico-ipam; it chooses by the name it is run as (cmd/calico).
  log "go build calico-ipam"
  go build -trimpath -ldflags "-s -w -X main.VERSION=$CALICO_VERSION" -o "$BIN/calico-ipam" "${pkgs[0]}"
  log "go build calico-kube-controllers"
  go build -trimpath -ldflags "-s -w" -o "$BIN/calico-kube-controllers" "${pkgs[1]}"
  log "go build calicoctl"
  # the version calicoctl compares with ClusterInformation's calicoVersion (calicoctl/Makefile's LDFLAGS)
  go build -trimpath -ldflags "-s -w -X github.com/projectcalico/calico/calicoctl/calicoctl/commands.VERSION=$CALICO_VERSION -X github.com/projectcalico/calico/calicoctl/calicoctl/commands/common.VERSION=$CALICO_VERSION" \
    -o "$BIN/calicoctl" "${pkgs[2]}"
}

build_dataplane() {
  local pkg="github.com/projectcalico/calico/node/cmd/calico-node"
  go_get "$pkg"
  # node/Makefile's LDFLAGS: startup.VERSION is what `-startup` writes into ClusterInformation's calicoVersion
  # (calicoctl compares its own with it), buildinfo what felix and the allocator report.
  local p="github.com/projectcalico/calico/node"
  log "go build calico-node (felix, startup, tunnel address allocator)"
  go build -trimpath -ldflags "-s -w -X $p/pkg/lifecycle/startup.VERSION=$CALICO_VERSION -X $p/buildinfo.GitVersion=$CALICO_VERSION -X $p/buildinfo.GitRevision=${CALICO_VERSION##*-} -X $p/buildinfo.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    -o "$BIN/calico-node" "$pkg"
}

# The smallest patches that build and run against CALICO_API_VERSION, both in the validator (docs/testbed.md,
# "Calico's own IPAM"; no IPAM code is touched):
#  1. api made IptablesBackendAuto/NFTables/Legacy typed constants (type IptablesBackend string); the
#     validator compares the field's string with them: does not compile. Cast them to string.
#  2. api's structs carry six validate tags this commit's validator does not register (assignmentMode on
#     IPPool, createDefaultHostEndpoint and assignIPs on KubeControllersConfiguration, stagedAction on the
#     staged policies, bgpFilterPrefixLengthV4/V6 on BGPFilter): go-playground's validator panics on an
#     unknown tag, so calico-kube-controllers dies at its first KubeControllersConfiguration update. Register
#     them, accepting the values the api declares (its constants; 0-32 and 0-128).
replace_once() {
  local f="$1" old="$2" new="$3"
  grep -qF "$old" "$f" || { echo "patch does not apply: $f has no line: $old" >&2; exit 1; }
  OLD="$old" NEW="$new" perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$f"
  grep -qF "$new" "$f" || { echo "patch failed: $f" >&2; exit 1; }
}
patch_source() {
  local f="$1/libcalico-go/lib/validator/v3/validator.go"
  replace_once "$f" \
    'return s == "" || s == api.IptablesBackendAuto || s == api.IptablesBackendNFTables || s == api.IptablesBackendLegacy' \
    'return s == "" || s == string(api.IptablesBackendAuto) || s == string(api.IptablesBackendNFTables) || s == string(api.IptablesBackendLegacy)'
  replace_once "$f" \
    '	registerFieldValidator("action", validateAction)' \
    '	registerFieldValidator("action", validateAction)
	registerFieldValidator("assignmentMode", validateStringIn("Automatic", "Manual"))
	registerFieldValidator("createDefaultHostEndpoint", validateStringIn("Enabled", "Disabled"))
	registerFieldValidator("assignIPs", validateStringIn("AllServices", "RequestedServicesOnly"))
	registerFieldValidator("stagedAction", validateStringIn("Set", "Delete", "Learn", "Ignore"))
	registerFieldValidator("bgpFilterPrefixLengthV4", validateIntUpTo(32))
	registerFieldValidator("bgpFilterPrefixLengthV6", validateIntUpTo(128))'
  cat >> "$f" <<'GO'

func validateStringIn(allowed ...string) validator.Func {
	return func(fl validator.FieldLevel) bool {
		s := fl.Field().String()
		for _, a := range allowed {
			if s == a {
				return true
			}
		}
		return false
	}
}

func validateIntUpTo(max int64) validator.Func {
	return func(fl validator.FieldLevel) bool {
		n := fl.Field().Int()
		return n >= 0 && n <= max
	}
}
GO
  log "patched libcalico-go/lib/validator/v3/validator.go (IptablesBackend constants cast to string; six api validate tags registered)"
}

main "$@"
exit $?
