#!/usr/bin/env bash
# scripts/release.sh VERSION OUTDIR: builds baton's release binaries into
# OUTDIR, writes OUTDIR/SHA256SUMS and checks every artefact.
#
# VERSION is a semantic version with a leading v (v1.2.3, v1.2.3-rc.1);
# it is stamped into the binary (-X main.version) with the commit
# (-X main.commit, the HEAD of the work tree, "+dirty" when it has
# uncommitted changes). Every binary is static (CGO_ENABLED=0), built with
# -trimpath and without symbols (-s -w), and embeds the time zone
# database (-tags timetzdata: --tz works on a host or an image that has
# none). It is the operator's binary: -tags nolab leaves out the lab's
# commands (drill, sim, bench: they stay in the default build, 'go run
# ./cmd/baton drill'), and -tags grpcnotrace the gRPC request tracing
# (golang.org/x/net/trace) that baton never serves. Names:
# baton-VERSION-GOOS-GOARCH, .exe for windows. For each linux target it
# also builds baton-kube-VERSION-linux-GOARCH, the same with the Lease
# store linked (-tags kube, for kube://NAMESPACE: client-go's REST client,
# about 4.8 MB more): the binary of the Kubernetes image (Containerfile,
# --build-arg FLAVOR=baton-kube).
#
# Checks: the binary for this machine's GOOS/GOARCH runs 'version' and
# must print VERSION and the commit; every binary's build info ('go
# version -m') must name its GOOS, GOARCH, CGO_ENABLED=0, -trimpath and the tags,
# and the binary must hold the stamped version and commit; SHA256SUMS
# must verify. A target that fails to build is named,
# the others still built and checked, and the script exits 1.
#
# BATON_RELEASE_TARGETS (space-separated GOOS/GOARCH) narrows the targets:
# the tests build one. The script tags nothing and uploads nothing: see
# the README's "Install" section for how a release is made.
set -euo pipefail

usage() {
	echo "usage: scripts/release.sh VERSION OUTDIR (VERSION like v1.2.3)" >&2
	exit 2
}
[[ $# -eq 2 ]] || usage
version=$1 out=$2
if ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "release: version \"$version\": want a semantic version with a leading v, such as v1.2.3 or v1.2.3-rc.1" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

targets=${BATON_RELEASE_TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64 freebsd/amd64"}
commit=unknown
if git -C "$root" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	commit=$(git -C "$root" rev-parse HEAD)
	if [[ -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
		commit+="+dirty"
		echo "release: the work tree has uncommitted changes: the binaries say commit $commit" >&2
	fi
fi
ldflags="-s -w -X main.version=$version -X main.commit=$commit"
tags=timetzdata,grpcnotrace,nolab
hostos=$(go env GOHOSTOS) hostarch=$(go env GOHOSTARCH)

failed=()
built=()
builds=()
for t in $targets; do
	builds+=("$t baton $tags")
	[[ ${t%/*} == linux ]] && builds+=("$t baton-kube $tags,kube")
done
for b in "${builds[@]}"; do
	read -r t flavor tags <<<"$b"
	goos=${t%/*} goarch=${t#*/}
	name="$flavor-$version-$goos-$goarch"
	[[ $goos == windows ]] && name+=".exe"
	rm -f "$out/$name"
	echo "release: building $name"
	if ! (cd "$root" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -tags "$tags" \
		-ldflags "$ldflags" -o "$out/$name" ./cmd/baton); then
		echo "release: $name does not build (the error is above)" >&2
		failed+=("$name: does not build")
		continue
	fi
	built+=("$name")

	# The build info: the target, static. It omits -ldflags under
	# -trimpath (golang/go#52372), so the stamped version and commit are
	# looked for in the binary itself.
	info=$(go version -m "$out/$name")
	for want in "GOOS=$goos" "GOARCH=$goarch" "CGO_ENABLED=0" "-trimpath=true" "-tags=$tags"; do
		if ! grep -qF -- "$want" <<<"$info"; then
			failed+=("$name: its build info lacks $want")
		fi
	done
	for want in "$version" "$commit"; do
		if ! grep -aqF -- "$want" "$out/$name"; then
			failed+=("$name: $want is not stamped in it")
		fi
	done
	# The one this machine can run says its version and commit.
	if [[ $goos == "$hostos" && $goarch == "$hostarch" ]]; then
		if ! got=$("$out/$name" version); then
			failed+=("$name: 'version' failed")
		elif ! grep -qxF "commit $commit" <<<"$got" || ! grep -q "^baton $version " <<<"$got"; then
			failed+=("$name: 'version' printed \"$(head -n 1 <<<"$got")\", not baton $version, commit $commit")
		elif [[ $flavor == baton-kube ]] && ! grep -q "^stores linked: .*kube" <<<"$got"; then
			failed+=("$name: 'version' does not list kube among the stores linked")
		else
			echo "release: $name version: $(head -n 1 <<<"$got")"
		fi
	fi
done

if [[ ${#built[@]} -gt 0 ]]; then
	(cd "$out" && sha256sum "${built[@]}" >SHA256SUMS && sha256sum --quiet -c SHA256SUMS) ||
		failed+=("SHA256SUMS: does not verify")
fi

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "release: $version FAILED; in $out:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "release: $version: ${#built[@]} binaries and SHA256SUMS in $out, commit $commit"
