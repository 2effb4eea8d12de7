#!/usr/bin/env bash
# A host line whose events are out of order (SPEC §4: nesting is by time,
# not by place in the line) must give the very tree its ordered copy gives:
# each capture is exported as written and with the events of every
# /host:CPU line reversed (reverse-host-lines.py), which sends every line
# through the runtime's sorted path, and the two trees are compared.
# Captures: the xplane-mkcapture scenarios and the ok-base corpus case.
# Usage: test-order.sh XPLANEFS XPLANE-MKCAPTURE
set -u
XPF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MK=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checked=0

compare() { # CAPTURE LABEL
	local f=$1 label=$2 name n
	name=$(basename "$f")
	mkdir -p "$tmp/a" "$tmp/b"
	cp "$f" "$tmp/a/$name"
	if ! n=$(python3 "$here/reverse-host-lines.py" "$f" "$tmp/b/$name"); then
		echo "FAIL: $label: could not reverse its host lines"
		fails=$((fails + 1))
		return
	fi
	if [ "$n" -eq 0 ]; then
		echo "FAIL: $label: no host line has two events to reverse"
		fails=$((fails + 1))
		return
	fi
	# the trees beside the folders (never beside a capture), both read
	# by the same name
	(cd "$tmp/a" && "$XPF" --export ../tree-a "$name" >/dev/null 2>&1)
	local rca=$?
	(cd "$tmp/b" && "$XPF" --export ../tree-b "$name" >/dev/null 2>&1)
	local rcb=$?
	if [ "$rca" -ne 0 ] || [ "$rcb" -ne 0 ]; then
		echo "FAIL: $label: export exits $rca as written, $rcb reversed"
		fails=$((fails + 1))
	elif ! diff -r "$tmp/tree-a" "$tmp/tree-b" >"$tmp/diff" 2>&1; then
		echo "FAIL: $label: $n lines reversed give another tree:"
		head -20 "$tmp/diff"
		fails=$((fails + 1))
	else
		echo "ok: $label ($n lines reversed)"
		checked=$((checked + 1))
	fi
	rm -rf "$tmp/a" "$tmp/b" "$tmp/tree-a" "$tmp/tree-b"
}

while IFS=$'\t' read -r sc _; do
	[ -n "$sc" ] || continue
	case $sc in multi-host | multi-host-*) continue ;; esac # run directories, not one capture
	if ! "$MK" "$sc" "$tmp/$sc.xplane.pb" >/dev/null 2>&1; then
		echo "FAIL: $sc: xplane-mkcapture could not write it"
		fails=$((fails + 1))
		continue
	fi
	compare "$tmp/$sc.xplane.pb" "$sc"
done < <("$MK" --list)
compare "$here/../bad/cases/ok-base.xplane.pb" ok-base

echo "$checked captures compared, $fails failures"
[ "$fails" -eq 0 ] && [ "$checked" -gt 0 ]
