#!/bin/bash
# The whole exported tree of every scenario and of every real capture in
# ../shared/captures, file by file, as sha256 sums kept in
# tests/golden/sums/<name>.sha256: `check` compares this build's exports with
# them (a refactor must change no byte users see: diagnosis.txt, pictures and
# pprof files included), `write` makes them again (scripts/update-golden runs
# it; review `git diff tests/golden` before committing).  A real capture is
# exported by its own path and named by its file name, which the tree quotes.
# Exit 77 when nothing ran.
# Usage: sums.sh XPLANEFS check|write
set -euo pipefail
xpf=$1
mode=$2
gen=$XPF_BUILD/tests/mkcapture/xplane-mkcapture
dir=$XPF_SOURCE/tests/golden/sums
captures=${XPF_SHARED:-$XPF_SOURCE/../shared}/captures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fails=0

# one NAME INPUT: export INPUT and check or write NAME's sums
one() {
	local name=$1 in=$2 out=$tmp/out-$1
	"$xpf" --export "$out" "$in" >/dev/null
	(cd "$out" && find . -type f | LC_ALL=C sort | xargs -d '\n' sha256sum) >"$tmp/$name.sha256"
	n=$((n + 1))
	if [ "$mode" = write ]; then
		cp "$tmp/$name.sha256" "$dir/$name.sha256"
		echo "tests/golden/sums/$name.sha256"
	elif [ ! -f "$dir/$name.sha256" ]; then
		echo "FAIL: $name: no tests/golden/sums/$name.sha256 (scripts/update-golden writes it)"
		fails=$((fails + 1))
	elif ! cmp -s "$dir/$name.sha256" "$tmp/$name.sha256"; then
		echo "FAIL: $name: files differ from the golden sums (scripts/update-golden, then review git diff tests/golden: diagnosis.txt, modules/, runtime/ show as text):"
		{ diff "$dir/$name.sha256" "$tmp/$name.sha256" || true; } | awk '/^[<>]/ { print "  " $3 }' | sort -u | head -20
		fails=$((fails + 1))
	else
		echo "ok: $name: $(wc -l <"$tmp/$name.sha256") files as golden"
	fi
}

case $mode in check | write) ;; *) echo "usage: $0 XPLANEFS check|write" >&2; exit 2 ;; esac
mkdir -p "$dir" "$tmp/cap"
if [ -x "$gen" ]; then
	while IFS=$'\t' read -r s _; do
		"$gen" "$s" "$tmp/cap/$s" >/dev/null # the export names the capture: same name each time
		in=$tmp/cap/$s
		[ -e "$in.xplane.pb" ] && in=$in.xplane.pb
		one "$s" "$in"
	done < <("$gen" --list)
	# the shape of a big real job: a Python tracer's line long enough to be
	# read in pieces (runtime: xpf_rt_pieces)
	"$gen" --job 2000 --steps 3 "$tmp/cap/job.xplane.pb" >/dev/null
	one job "$tmp/cap/job.xplane.pb"
	# the same job with its Python tracer's calls on the main thread's line
	# (between the host events there, as post-processing merges the lines
	# of one thread): no execution, module or diagnosis may change
	mkdir -p "$tmp/cap/python-main"
	"$gen" --job 2000 --steps 3 --variant python-main "$tmp/cap/python-main/job.xplane.pb" >/dev/null
	one job-python-main "$tmp/cap/python-main/job.xplane.pb"
	for f in diagnosis.txt runtime/executions.tsv modules/index.tsv; do
		if ! cmp -s "$tmp/out-job/$f" "$tmp/out-job-python-main/$f"; then
			echo "FAIL: job-python-main: $f differs from job's"
			fails=$((fails + 1))
		fi
	done
else
	echo "skip: $gen is not built: no scenario checked"
fi
# Real captures: in check mode those the sums name, where ../shared has them
# (a capture added there is not a failure); write mode writes every one.
if [ "$mode" = check ]; then
	for f in "$dir"/real-*.sha256; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .sha256)
		c=$captures/${name#real-}
		if [ -e "$c" ]; then one "$name" "$c"; else echo "skip: $c is absent"; fi
	done
elif [ -d "$captures" ]; then
	for c in "$captures"/*.xplane.pb "$captures"/*/; do
		[ -e "$c" ] || continue
		c=${c%/}
		# jax-h200: its own test (tests/h200), against JAX's figures
		case $(basename "$c") in bad | hlo | jax-h200) continue ;; esac
		one "real-$(basename "$c")" "$c"
	done
fi
[ $n -gt 0 ] || { echo "skip: no scenario and no real capture to export"; exit 77; }
[ $fails -eq 0 ] || { echo "$fails of $n trees differ"; exit 1; }
echo "$n trees as golden"
