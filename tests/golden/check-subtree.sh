#!/bin/bash
# One subtree (modules or runtime) of each scenario's golden tree, byte for
# byte: build the scenario with xplane-mkcapture, export it, compare
# <subtree>/ with tests/golden/<scenario>/<subtree>/ (regenerate with
# scripts/update-golden and review the diff).  `diagnosis` compares the
# diagnosis.txt files (the top one, each host's), so that a change of what
# users read first shows as a text diff in the commit that makes it.
# Exit 77 (skip) where the generator or the golden trees are absent.
# Usage: check-subtree.sh XPLANEFS modules|runtime|diagnosis
set -euo pipefail
xpf=$1
sub=$2
# The svg each subtree holds belongs to the svg renderer and has its own checks.
case $sub in
modules) svg=heap.svg ;;
runtime) svg=timeline.svg ;;
diagnosis) svg=none ;;
*) echo "usage: $0 XPLANEFS modules|runtime|diagnosis" >&2; exit 2 ;;
esac
gen=$XPF_BUILD/tests/mkcapture/xplane-mkcapture
golden=$XPF_SOURCE/tests/golden
[ -x "$gen" ] || { echo "skip: $gen is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
# A run directory's scenario (several hosts) keeps hosts/<host>/<subtree>/.
names=("$sub")
[ "$sub" = diagnosis ] && names=(diagnosis.txt)
for g in "$golden"/*/"${names[0]}" "$golden"/*/hosts/*/"${names[0]}"; do
	[ -e "$g" ] || continue
	rel=${g#"$golden"/}
	s=${rel%%/*}
	if [ ! -d "$tmp/out-$s" ]; then
		mkdir -p "$tmp/cap" # --export never writes beside a capture
		"$gen" "$s" "$tmp/cap/$s" >/dev/null
		in=$tmp/cap/$s
		[ -e "$in.xplane.pb" ] && in=$in.xplane.pb
		"$xpf" --export "$tmp/out-$s" "$in"
	fi
	diff -r -x "$svg" "$g" "$tmp/out-$rel"
	echo "ok: $rel equals the golden one"
	n=$((n + 1))
done
[ $n -gt 0 ] || { echo "skip: no golden $sub/ trees"; exit 77; }
