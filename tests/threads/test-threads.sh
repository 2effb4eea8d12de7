#!/usr/bin/env bash
# The scans share their work out between threads (host lines cut into
# shards, device planes one per thread; SPEC §7).  Whatever the number of
# threads, every file of the tree must be the same, byte for byte: this
# exports the tree of each capture with XPF_THREADS=1 and 3 (which also
# drops the size below which one thread reads the host lines) and compares.
# Captures: the scenarios of xplane-mkcapture, scaled so that lines and
# planes are many, and every real capture in $XPF_SHARED/captures (skipped,
# saying so, when absent).
# Usage: test-threads.sh XPLANEFS [XPLANE-MKCAPTURE]
set -u
XPF=$1
MK=${2:-}
SHARED=${XPF_SHARED:-../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checked=0

compare() {
	local f=$1 label=$2 t rc1 rc
	XPF_THREADS=1 "$XPF" --export "$tmp/t1" "$f" >"$tmp/t1.out" 2>&1
	rc1=$?
	for t in 3; do
		XPF_THREADS=$t "$XPF" --export "$tmp/t$t" "$f" >"$tmp/t$t.out" 2>&1
		rc=$?
		if [ "$rc" != "$rc1" ] || ! cmp -s "$tmp/t1.out" "$tmp/t$t.out"; then
			echo "FAIL: $label: XPF_THREADS=$t exits $rc ($(head -c 300 "$tmp/t$t.out")), one thread $rc1"
			fails=$((fails + 1))
		elif { [ -e "$tmp/t1" ] || [ -e "$tmp/t$t" ]; } &&
			! diff -r "$tmp/t1" "$tmp/t$t" >"$tmp/diff" 2>&1; then
			echo "FAIL: $label: XPF_THREADS=$t differs from one thread:"
			head -20 "$tmp/diff"
			fails=$((fails + 1))
		fi
		rm -rf "$tmp/t$t"
	done
	rm -rf "$tmp/t1"
	checked=$((checked + 1))
}

if [ -n "$MK" ] && [ -x "$MK" ]; then
	for sc in grads-kept foreign-arrays scan-fits multi-host attention-too-big eager; do
		out=$tmp/$sc.xplane.pb
		# the scenarios that do not scale (multi-host, eager) are written as they are
		label="$sc (scale 12)"
		"$MK" "$sc" --scale 12 "$out" >/dev/null 2>&1 || {
			label="$sc (unscaled)"
			"$MK" "$sc" "$out" >/dev/null 2>&1
		} || {
			echo "FAIL: $sc: xplane-mkcapture could not write it"
			fails=$((fails + 1))
			continue
		}
		compare "$out" "$label"
		rm -rf "$out"
	done
else
	echo "note: xplane-mkcapture not built: scenarios skipped"
fi

if [ -d "$SHARED/captures" ]; then
	while IFS= read -r f; do
		compare "$f" "${f#"$SHARED"/}"
	done < <(find "$SHARED/captures" -maxdepth 2 -name '*.xplane.pb' | sort)
else
	echo "note: $SHARED/captures is absent: real captures skipped"
fi

echo "$checked captures compared, $fails failures"
[ "$checked" -gt 0 ] || { echo "SKIP: nothing to compare"; exit 77; }
[ "$fails" -eq 0 ]
