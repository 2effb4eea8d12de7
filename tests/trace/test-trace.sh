#!/usr/bin/env bash
# runtime/memory.trace.json (issue 27, SPEC §9), checked with jq against the
# TSV files of the same tree, for every scenario capture: it is valid JSON
# with a traceEvents array; the counter points of each allocator are the
# events of events.tsv whose in_use_after_bytes differs from that
# allocator's previous point, at the same times (microseconds with three
# decimals = the integer nanoseconds); one span per row of executions.tsv
# (module, n, launched, start, end); one instant per row of retries.tsv.
# Where `go` is installed, `go tool pprof -top` reads a peak.pb.gz and its
# top line is the largest buffer's.  Exit 77 (skip) without jq or the
# generator.
# Usage: test-trace.sh XPLANEFS
set -u
XPF=$1
gen=${XPF_BUILD:-.}/tests/mkcapture/xplane-mkcapture
command -v jq >/dev/null || { echo "skip: jq is absent"; exit 77; }
[ -x "$gen" ] || { echo "skip: $gen is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# us NS: the trace's spelling of a time in ns
us() { awk -v n="$1" 'BEGIN { s = n < 0 ? "-" : ""; if (n < 0) n = -n; printf "%s%d.%03d\n", s, int(n / 1000), n % 1000 }'; }

check_tree() { # DIR LABEL
	local d=$1 label=$2
	local t=$d/runtime/memory.trace.json
	if ! jq -e '.traceEvents | type == "array"' "$t" >/dev/null 2>"$tmp/jq.err"; then
		fail "$label: memory.trace.json is not valid trace JSON: $(head -c 200 "$tmp/jq.err")"
		return
	fi
	# counters: allocator, ts, bytes
	jq -r '.traceEvents[] | select(.ph == "C") | [.name, (.ts | tostring), (.args.in_use_bytes | tostring)] | @tsv' "$t" >"$tmp/c.got"
	# jq prints 1965.6 for 1965.600: compare numbers, written again by awk
	awk -F'\t' '{ printf "%s\t%.3f\t%s\n", $1, $2, $3 }' "$tmp/c.got" >"$tmp/c.got2"
	awk -F'\t' 'NR > 1 { if (!($2 in last) || last[$2] != $7) { last[$2] = $7; n = $1; printf "%s\t%.3f\t%s\n", $2, n / 1000, $7 } }' \
		"$d/runtime/events.tsv" >"$tmp/c.want"
	if ! cmp -s "$tmp/c.got2" "$tmp/c.want"; then
		fail "$label: counters differ from events.tsv: $(diff "$tmp/c.want" "$tmp/c.got2" | head -5 | tr '\n' ' ')"
	fi
	# spans: n, module, launched, start, end
	jq -r '.traceEvents[] | select(.ph == "X") | [(.args.n | tostring), .args.module, .args.launched, (.ts | tostring), ((.ts + .dur) | tostring)] | @tsv' "$t" |
		awk -F'\t' '{ printf "%s\t%s\t%s\t%.3f\t%.3f\n", $1, $2, $3, $4, $5 }' >"$tmp/x.got"
	awk -F'\t' 'NR > 1 { printf "%s\t%s\t%s\t%.3f\t%.3f\n", $1, $3, $7, $5 / 1000, $6 / 1000 }' \
		"$d/runtime/executions.tsv" >"$tmp/x.want"
	if ! cmp -s "$tmp/x.got" "$tmp/x.want"; then
		fail "$label: spans differ from executions.tsv: $(diff "$tmp/x.want" "$tmp/x.got" | head -5 | tr '\n' ' ')"
	fi
	# instants: one per retry, at its time
	jq -r '.traceEvents[] | select(.ph == "i") | [(.ts | tostring), (.args.duration_ns | tostring)] | @tsv' "$t" |
		awk -F'\t' '{ printf "%.3f\t%s\n", $1, $2 }' >"$tmp/i.got"
	awk -F'\t' 'NR > 1 { printf "%.3f\t%s\n", $1 / 1000, $2 }' "$d/runtime/retries.tsv" >"$tmp/i.want"
	cmp -s "$tmp/i.got" "$tmp/i.want" || fail "$label: instants differ from retries.tsv"
	echo "ok: $label: $(wc -l <"$tmp/c.want") counter points, $(wc -l <"$tmp/x.want") spans, $(wc -l <"$tmp/i.want") retries"
}

mkdir -p "$tmp/cap"
n=0
while IFS=$'\t' read -r s _; do
	"$gen" "$s" "$tmp/cap/$s" >/dev/null || { fail "xplane-mkcapture $s"; continue; }
	in=$tmp/cap/$s
	[ -f "$in" ] && mv "$in" "$in.xplane.pb" && in=$in.xplane.pb
	"$XPF" --export "$tmp/out-$s" "$in" || { fail "$s: --export"; continue; }
	if [ -d "$tmp/out-$s/hosts" ]; then
		for hd in "$tmp/out-$s"/hosts/*/; do
			check_tree "$hd" "$s/hosts/$(basename "$hd")"
		done
	else
		check_tree "$tmp/out-$s" "$s"
	fi
	n=$((n + 1))
done < <("$gen" --list)
[ $n -ge 10 ] || fail "only $n scenarios"

if command -v go >/dev/null; then
	p=$(ls "$tmp"/out-attention-too-big/modules/*/peak.pb.gz | head -1)
	if HOME=$tmp go tool pprof -top -unit=B -sample_index=space "$p" >"$tmp/top" 2>&1; then
		# the total is the heap peak (3925934836, tests/scenarios); pprof
		# sums flat bytes by the innermost frame: the top one is
		# Attention.__call__ (5 x (q, k, v, probs, attn_out) = 1600 MiB)
		grep -q 'of 3925934836B total' "$tmp/top" &&
			grep -m1 -E '^ *1677721600B .* Attention\.__call__$' "$tmp/top" >/dev/null &&
			echo "ok: go tool pprof -top reads peak.pb.gz: 3925934836 B in all, Attention.__call__ first" ||
			fail "go tool pprof -top: $(head -c 400 "$tmp/top")"
	else
		fail "go tool pprof: $(head -c 400 "$tmp/top")"
	fi
else
	echo "skip: go is absent: the go tool pprof check did not run"
fi
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
