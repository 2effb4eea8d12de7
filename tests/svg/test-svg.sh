#!/usr/bin/env bash
# heap.svg and timeline.svg are well-formed XML and small (SPEC §3), for
#  - the hand-made plans and runtimes of test_svg (100 and 100,000 steps,
#    400,000 allocator events, 5,000 executions),
#  - the scenario captures of xplane-mkcapture, when it is built,
#  - every real capture in $XPF_SHARED/captures (skipped, saying so, when absent).
# Usage: test-svg.sh XPLANEFS TEST_SVG
# With XPF_SVG_RENDER=DIR, also renders every picture to DIR/*.png with
# scripts/render-svg (slow: a headless Chromium per file).
set -u
XPF=$1
TEST_SVG=$2
SHARED=${XPF_SHARED:-../shared}
BUILD=${XPF_BUILD:-build}
SOURCE=${XPF_SOURCE:-.}
MAX_BYTES=${XPF_SVG_MAX_BYTES:-98304}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checked=0

command -v xmllint >/dev/null || { echo "SKIP: xmllint is not installed (libxml2-utils)"; exit 77; }

# check FILE LABEL: well-formed, an <svg> root, a <title>, small enough.
check() {
	local f=$1 label=$2 size
	size=$(wc -c <"$f")
	if ! xmllint --noout "$f" 2>"$tmp/xmllint.err"; then
		echo "FAIL: $label: not well-formed XML: $(head -c 400 "$tmp/xmllint.err")"
		fails=$((fails + 1))
		return
	fi
	if [ "$(xmllint --xpath 'local-name(/*)' "$f" 2>/dev/null)" != svg ]; then
		echo "FAIL: $label: the root element is not <svg>"
		fails=$((fails + 1))
		return
	fi
	if ! grep -q '<title>' "$f"; then
		echo "FAIL: $label: no <title> hover text"
		fails=$((fails + 1))
		return
	fi
	if [ "$size" -gt "$MAX_BYTES" ]; then
		echo "FAIL: $label: $size bytes, more than $MAX_BYTES"
		fails=$((fails + 1))
		return
	fi
	checked=$((checked + 1))
	echo "ok: $label ($size bytes)"
	if [ -n "${XPF_SVG_RENDER:-}" ]; then
		mkdir -p "$XPF_SVG_RENDER"
		local out
		out="$XPF_SVG_RENDER/$(echo "$label" | tr -c 'A-Za-z0-9._-' '_').svg"
		cp "$f" "$out"
		"$SOURCE/scripts/render-svg" "$out" >/dev/null || echo "note: could not render $label"
	fi
}

# pictures CAPTURE LABEL: timeline.svg and every module's heap.svg.
pictures() {
	local cap=$1 label=$2 dir n=0
	if "$XPF" --cat runtime/timeline.svg "$cap" >"$tmp/t.svg" 2>"$tmp/err"; then
		check "$tmp/t.svg" "$label runtime/timeline.svg"
	elif [[ $cap != *.hlo.pb && $cap != *.hlo_proto.pb ]] || ! grep -q "no such file" "$tmp/err"; then
		# only a bare HloProto's plan-only tree has no runtime/
		echo "FAIL: $label runtime/timeline.svg: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
	fi
	if ! "$XPF" --cat modules/index.tsv "$cap" >"$tmp/index.tsv" 2>"$tmp/err"; then
		echo "FAIL: $label modules/index.tsv: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
		return
	fi
	while IFS= read -r dir; do
		n=$((n + 1))
		if ! "$XPF" --cat "modules/$dir/heap.svg" "$cap" >"$tmp/h.svg" 2>"$tmp/err"; then
			echo "FAIL: $label modules/$dir/heap.svg: $(head -c 300 "$tmp/err")"
			fails=$((fails + 1))
			continue
		fi
		check "$tmp/h.svg" "$label modules/$dir/heap.svg"
	done < <(tail -n +2 "$tmp/index.tsv" | cut -f1)
}

# 1. hand-made inputs
mkdir "$tmp/unit"
if XPF_SVG_OUT="$tmp/unit" "$TEST_SVG" >"$tmp/unit.log" 2>&1; then
	for f in "$tmp"/unit/*.svg; do
		check "$f" "test_svg $(basename "$f")"
	done
else
	echo "FAIL: test_svg: $(tail -5 "$tmp/unit.log")"
	fails=$((fails + 1))
fi

# 2. scenario captures
MK=$BUILD/tests/mkcapture/xplane-mkcapture
if [ -x "$MK" ]; then
	for s in $("$MK" --list | cut -f1); do
		if "$MK" "$s" "$tmp/$s.xplane.pb" >/dev/null 2>"$tmp/err"; then
			if [ -d "$tmp/$s.xplane.pb" ]; then # a run directory: each host's capture
				for h in "$tmp/$s.xplane.pb"/*.xplane.pb; do
					pictures "$h" "$s $(basename "$h" .xplane.pb)"
				done
			else
				pictures "$tmp/$s.xplane.pb" "$s"
			fi
		else
			echo "note: xplane-mkcapture $s: $(head -c 200 "$tmp/err")"
		fi
	done
else
	echo "skip: $MK is not built: no scenario capture checked"
fi

# 3. real captures
C=$SHARED/captures
if [ -d "$C" ]; then
	for cap in "$C"/*.xplane.pb "$C"/hlo/*.pb; do
		[ -f "$cap" ] || continue
		pictures "$cap" "$(basename "$cap")"
	done
	[ -d "$C/mi300x-conv-run" ] && pictures "$C/mi300x-conv-run" "mi300x-conv-run"
else
	echo "skip: $C is absent: no real capture checked"
fi

echo "$checked pictures checked, $fails failures"
[ "$checked" -gt 0 ] || { echo "FAIL: no picture checked"; exit 1; }
[ "$fails" -eq 0 ]
