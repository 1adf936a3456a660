#!/usr/bin/env bash
# Builds MetalLB's controller from its Go module go.universe.tf/metallb, no release download. Called by
# test/testbed/metallb-build.ts, which handles locking, the stamp file and timing.
#
# Inputs (environment):
#   METALLB_ROOT     cache root for MetalLB, e.g. ~/.cache/kube-renumber/metallb
#   TB_ROOT          the control plane's cache root (its Go module cache and build cache are shared, read and extended)
#   METALLB_VERSION  the module version, e.g. v0.16.2
# Output: $METALLB_ROOT/$METALLB_VERSION/bin/metallb-controller and
#         $METALLB_ROOT/$METALLB_VERSION/crds/ (the CRDs of the same version, config/crd/bases)
#
# The module is built as a dependency of a wrapper module (generated in the cache): its go.mod's own replaces are
# carried over, since Go ignores a dependency's replaces. The build cache is the testbed's (never cleaned here).
# MetalLB v0.16.2 requires github.com/metallb/frr-k8s v0.0.27, whose zip the Go proxy refuses ("This module version
# is not available", 403; v0.0.24 too): the wrapper replaces it with a copy of FRR_K8S_VERSION (v0.0.26, the newest
# one served) with the one API addition of v0.0.27 MetalLB uses (AsPathPrependPrefixes and Advertise's
# PrefixesWithAsPathPrepend, written by internal/bgp/frrk8s for the speaker's FRR-K8s configuration; no controller
# code reads them). Listed in docs/testbed.md.
set -euo pipefail

main() {

: "${METALLB_ROOT:?}" "${TB_ROOT:?}" "${METALLB_VERSION:?}"

VDIR="$METALLB_ROOT/$METALLB_VERSION"
BIN="$VDIR/bin"
SRC="$VDIR/src"
mkdir -p "$BIN" "$SRC"

export GOMODCACHE="$TB_ROOT/go/mod"
export GOCACHE="${KUBE_RENUMBER_GOCACHE:-$TB_ROOT/go/build-cache}"
export GOPATH="$METALLB_ROOT/go/path"
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
unset GOBIN

log() { printf '[metallb build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v go >/dev/null || { echo "MetalLB is built from its Go module: install Go >= 1.26" >&2; exit 1; }

log "resolving go.universe.tf/metallb@$METALLB_VERSION"
local json dir gomod
json="$(go mod download -json "go.universe.tf/metallb@$METALLB_VERSION")"
dir="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
gomod="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[ -d "$dir" ] && [ -f "$gomod" ] || { echo "cannot download go.universe.tf/metallb@$METALLB_VERSION" >&2; exit 1; }

# The CRDs of the same version (IPAddressPool, L2Advertisement, ConfigurationState, ...).
rm -rf "$VDIR/crds"
mkdir -p "$VDIR/crds"
cp "$dir"/config/crd/bases/*.yaml "$VDIR/crds/"
chmod -R u+w "$VDIR/crds"

local frr="$SRC/frr-k8s" frrdir
frrdir="$(go mod download -json "github.com/metallb/frr-k8s@${FRR_K8S_VERSION:-v0.0.26}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$frrdir" ] || { echo "cannot download github.com/metallb/frr-k8s@${FRR_K8S_VERSION:-v0.0.26}" >&2; exit 1; }
rm -rf "$frr"
cp -r "$frrdir" "$frr"
chmod -R u+w "$frr"
patch_frr "$frr/api/v1beta1"

local wrap="$SRC/wrap"
rm -rf "$wrap"
mkdir -p "$wrap"
cd "$wrap"
{
  echo "module kube-renumber.local/metallb/build"
  echo
  grep -m1 '^go ' "$gomod"
  echo
  echo "require go.universe.tf/metallb $METALLB_VERSION"
  echo
  echo "replace github.com/metallb/frr-k8s => ../frr-k8s"
  # both forms: `replace a => b v1` and a `replace ( ... )` block; local-path replaces (=> ./x) are skipped
  awk '/^replace[[:space:]]*\($/ { blk = 1; next }
       blk && /^\)/ { blk = 0; next }
       { line = $0; sub(/^replace[[:space:]]+/, "", line) }
       (blk || /^replace[[:space:]]/) && line ~ /^[[:space:]]*[^ ]+ => [^ .\/][^ ]* v[^ ]*[[:space:]]*$/ { gsub(/^[[:space:]]+/, "", line); print "replace " line }' "$gomod"
} > go.mod
# the module's own go.sum holds the sums of its dependencies: the proxy serves the same versions
cp "$dir/go.sum" go.sum
chmod u+w go.sum

local pkg="go.universe.tf/metallb/controller"
log "go get $pkg"
local logf="$VDIR/go-get.log"
if ! go get "$pkg" > "$logf" 2>&1; then
  tail -n 60 "$logf" >&2
  echo "go get failed (full log: $logf)" >&2
  return 1
fi
log "go build metallb-controller"
go build -trimpath -ldflags "-s -w" -o "$BIN/metallb-controller" "$pkg"

rm -rf "$wrap"
log "done: $(ls "$BIN" | tr '\n' ' ')"
}

# frr-k8s v0.0.27's API addition MetalLB v0.16.2 compiles against (the prefixes advertised with an AS path prepend).
patch_frr() {
  local f="$1/frrconfiguration_types.go"
  grep -qF 'PrefixesWithCommunity []CommunityPrefixes `json:"withCommunity,omitempty"`' "$f" || { echo "patch does not apply: $f" >&2; exit 1; }
  perl -0pi -e 's/(\tPrefixesWithCommunity \[\]CommunityPrefixes `json:"withCommunity,omitempty"`\n)/$1\n\t\/\/ PrefixesWithAsPathPrepend: prefixes advertised with an AS path prepend (frr-k8s v0.0.27).\n\t\/\/ +optional\n\tPrefixesWithAsPathPrepend []AsPathPrependPrefixes `json:"withAsPathPrepend,omitempty"`\n/' "$f"
  grep -qF 'PrefixesWithAsPathPrepend []AsPathPrependPrefixes' "$f" || { echo "patch failed: $f" >&2; exit 1; }
  cat > "$1/aspathprepend_compat.go" <<'GO'
package v1beta1

// AsPathPrependPrefixes is frr-k8s v0.0.27's: prefixes advertised with an AS path prepend of AsPathPrepend.
type AsPathPrependPrefixes struct {
	Prefixes      []string `json:"prefixes,omitempty"`
	AsPathPrepend uint8    `json:"asPathPrepend,omitempty"`
}
GO
  log "patched frr-k8s api/v1beta1 (AsPathPrependPrefixes, Advertise.PrefixesWithAsPathPrepend)"
}

main "$@"
exit $?
