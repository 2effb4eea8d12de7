#!/bin/bash
# The runtime/ part of each scenario's golden tree, byte for byte: build the
# scenario with xplane-mkcapture, export it, compare runtime/ with
# tests/golden/<scenario>/runtime/ (regenerate with scripts/update-golden).
# Exit 77 (skip) where the generator or the golden trees are absent.
set -euo pipefail
xpf=$1
gen=$XPF_BUILD/tests/mkcapture/xplane-mkcapture
golden=$XPF_SOURCE/tests/golden
[ -x "$gen" ] || { echo "skip: $gen is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
# A run directory's scenario (several hosts) keeps hosts/<host>/runtime/.
for g in "$golden"/*/runtime "$golden"/*/hosts/*/runtime; do
	[ -d "$g" ] || continue
	rel=${g#"$golden"/}
	s=${rel%%/*}
	if [ ! -d "$tmp/out-$s" ]; then
		"$gen" "$s" "$tmp/$s" >/dev/null
		in=$tmp/$s
		[ -e "$in.xplane.pb" ] && in=$in.xplane.pb
		"$xpf" --export "$tmp/out-$s" "$in"
	fi
	# timeline.svg belongs to the svg renderer and has its own checks
	diff -r -x timeline.svg "$g" "$tmp/out-$rel"
	echo "ok: $rel/ equals the golden tree"
	n=$((n + 1))
done
[ $n -gt 0 ] || { echo "skip: no golden runtime/ trees"; exit 77; }
