#!/usr/bin/env bash
# --base (SPEC §8, issue 26): pairs of scenario captures compared, the
# figures in compare/ checked against the scenarios' hand-derived figures
# (tests/scenarios/*.json) and against the two trees' own files.
set -u
XPF=$1
MK=$2
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

mkdir -p "$tmp/caps"
for s in attention-too-big grads-kept no-donation temp-fragmentation convert-copy foreign-arrays multi-host no-runtime; do
	"$MK" "$s" "$tmp/caps/$s" >/dev/null || { echo "cannot build $s"; exit 1; }
done
cap() { echo "$tmp/caps/$1"; }
sj() { jq -r "$2" "$here/scenarios/$1.json"; }

# export BASE AFTER: the whole compared tree into $tmp/out/BASE-AFTER
export_pair() {
	local d="$tmp/out/$1-$2"
	mkdir -p "$tmp/out"
	"$XPF" --base "$(cap "$1")" --export "$d" "$(cap "$2")" 2>"$tmp/err" ||
		{ fail "--base $1 --export ... $2: exit $?: $(head -c 300 "$tmp/err")"; return 1; }
	echo "$d"
}

# want DIR CODE before after: a change's figures in compare/diagnosis.json
want() {
	local d=$1 code=$2 before=$3 after=$4
	local got
	got=$(jq -r --arg c "$code" '[.changes[] | select(.code == $c)][0].figures |
		"\(.before_bytes) \(.after_bytes) \(.delta_bytes)"' "$d/compare/diagnosis.json")
	if [ "$got" = "$before $after $((after - before))" ]; then
		ok "$(basename "$d"): $code $before -> $after ($((after - before)))"
	else
		fail "$(basename "$d"): $code: got '$got', want '$before $after $((after - before))'"
	fi
}

# has DIR LINE-REGEX: a line of compare/diagnosis.txt
has() {
	if grep -qE -- "$2" "$1/compare/diagnosis.txt"; then ok "$(basename "$1"): /$2/"
	else fail "$(basename "$1"): compare/diagnosis.txt lacks /$2/: $(head -c 600 "$1/compare/diagnosis.txt")"; fi
}

# The TSVs against each tree's own files: every figure of modules.tsv is
# the figure of base/modules/index.tsv and modules/index.tsv; allocators.tsv
# those of both runtime/allocators.tsv; peak_buffers.tsv sums to both heap peaks.
tsv_match() {
	local d=$1 pre=${2:-} b=$1/base/${3:-} c=$1/compare/${2:-}
	local bad
	bad=$(awk -F'\t' -v B="$b" -v A="$d/$pre" '
		FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
		FILENAME == B "modules/index.tsv" { for (k in names) bi[$1, k] = $col[FILENAME, k]; next }
		FILENAME == A "modules/index.tsv" { for (k in names) ai[$1, k] = $col[FILENAME, k]; next }
		BEGIN { split("parameters_bytes non_aliased_outputs_bytes temp_bytes heap_peak_bytes need_bytes executions", l, " ")
			for (i in l) names[l[i]] = 1 }
		{ n++
		  for (k in names) {
			cb = col[FILENAME, "base_" k]; ca = col[FILENAME, k]; cd = col[FILENAME, "delta_" k]
			if ($3 != "" && $cb != bi[$3, k]) print "row " n " base_" k " " $cb " != " bi[$3, k]
			if ($4 != "" && $ca != ai[$4, k]) print "row " n " " k " " $ca " != " ai[$4, k]
			if ($3 != "" && $4 != "" && $cd != $ca - $cb) print "row " n " delta_" k
		  } }
		END { if (n == 0) print "no rows" }' "$b"modules/index.tsv "$d/$pre"modules/index.tsv "$c"modules.tsv)
	[ -z "$bad" ] && ok "$(basename "$d"): ${c#$d/}modules.tsv = both index.tsv" ||
		fail "$(basename "$d"): ${c#$d/}modules.tsv: $bad"
	bad=$(awk -F'\t' -v B="$b" -v A="$d/$pre" '
		FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
		FILENAME == B "runtime/allocators.tsv" { for (k in names) bv[$1, k] = $col[FILENAME, k]; next }
		FILENAME == A "runtime/allocators.tsv" { for (k in names) av[$1, k] = $col[FILENAME, k]; next }
		BEGIN { split("capacity_bytes peak_in_window_bytes lifetime_peak_bytes live_at_end_bytes", l, " ")
			for (i in l) names[l[i]] = 1 }
		{ for (k in names) {
			if ($col[FILENAME, "base_" k] != bv[$1, k]) print $1 " base_" k
			if ($col[FILENAME, k] != av[$1, k]) print $1 " " k
		  } }' "$b"runtime/allocators.tsv "$d/$pre"runtime/allocators.tsv "$c"allocators.tsv 2>&1)
	[ -z "$bad" ] && ok "$(basename "$d"): ${c#$d/}allocators.tsv = both allocators.tsv" ||
		fail "$(basename "$d"): ${c#$d/}allocators.tsv: $bad"
	local sums hb ha
	sums=$(awk -F'\t' 'NR > 1 { b += $8; a += $9 } END { printf "%.0f %.0f", b, a }' "$c"peak_buffers.tsv)
	hb=$(jq -r '.base.module_dir' "$c"diagnosis.json)
	ha=$(jq -r '.after.module_dir' "$c"diagnosis.json)
	hb=$(jq -r '.heap_peak.bytes' "$b/modules/$hb/plan.json" 2>/dev/null || echo 0)
	ha=$(jq -r '.heap_peak.bytes' "$d/$pre/modules/$ha/plan.json" 2>/dev/null || echo 0)
	[ "$sums" = "$hb $ha" ] && ok "$(basename "$d"): ${c#$d/}peak_buffers.tsv sums to both heap peaks ($sums)" ||
		fail "$(basename "$d"): ${c#$d/}peak_buffers.tsv sums $sums, heap peaks $hb $ha"
}

# 1. The attention step that did not fit (3.72 GiB > 2.79 GiB) against a
#    jit_step that fits (grads-kept's): fits now; the leak it has appears.
B=attention-too-big A=grads-kept
if d=$(export_pair $B $A); then
	has "$d" "^\[measured\] fits-now: jit_step fits now, 788\.0 MiB <= 2\.79 GiB .*before: needed 3\.72 GiB > 2\.79 GiB, short by 950\.2 MiB"
	want "$d" fits-now "$(sj $B .plan.need_bytes)" "$(sj $A .plan.need_bytes)"
	want "$d" temp "$(sj $B .plan.temp_bytes)" "$(sj $A .plan.temp_bytes)"
	want "$d" non-aliased-outputs "$(sj $B .plan.non_aliased_outputs_bytes)" "$(sj $A .plan.non_aliased_outputs_bytes)"
	want "$d" heap-peak "$(sj $B .plan.heap_peak_bytes)" "$(sj $A .plan.heap_peak_bytes)"
	want "$d" growth-per-execution 0 "$(sj $A .runtime.growth_per_execution_bytes)"
	want "$d" pool-peak "$(sj $B .runtime.peak_in_window_bytes)" "$(sj $A .runtime.peak_in_window_bytes)"
	has "$d" "^\[inferred\] codes-gone: 5 findings went away: plan-exceeds-pool, mostly-forward, allocator-retry, never-launched, xla-remat -> base/diagnosis.txt$"
	has "$d" "^\[inferred\] codes-new: 2 findings appeared: fits, growth-per-execution -> diagnosis.txt$"
	fwd=$(jq -r '[.changes[] | select(.code == "peak-role" and (.text | startswith("forward")))][0].figures.before_bytes' "$d/compare/diagnosis.json")
	[ "$fwd" = "$(sj $B .plan.roles_bytes.forward)" ] && ok "forward-kept before $fwd" || fail "forward-kept before $fwd"
	[ "$(head -1 "$d/compare/diagnosis.txt" | grep -c 'fits-now')" = 0 ] && [ "$(sed -n 2p "$d/compare/diagnosis.txt" | grep -c '^\[measured\] fits-now')" = 1 ] &&
		ok "fits-now is the first finding" || fail "fits-now is not first"
	tsv_match "$d"
	# the largest change of peak_buffers.tsv first: the 5 f32[8,8,1024,1024] softmax buffers gone
	row=$(sed -n 2p "$d/compare/peak_buffers.tsv" | cut -f1,3,5,6,10)
	[ "$row" = "$(printf 'forward\tf32[8,8,1024,1024]{3,2,1,0}\t5\t0\t-1342177280')" ] && ok "peak_buffers.tsv first row: $row" ||
		fail "peak_buffers.tsv first row: $row"
fi

# 2. no-donation (need 3.88 GiB > 2.79 GiB) against convert-copy's
#    jit_train_step (donates its state; a 12 GiB pool): fits now.
B=no-donation A=convert-copy
if d=$(export_pair $B $A); then
	has "$d" "^\[measured\] fits-now: jit_train_step fits now, 6\.79 GiB <= 12\.00 GiB"
	want "$d" fits-now "$(sj $B .plan.need_bytes)" "$(sj $A .plan.need_bytes)"
	want "$d" donated "$(sj $B .plan.donated_bytes)" "$(sj $A .plan.donated_bytes)"
	want "$d" non-aliased-outputs "$(sj $B .plan.non_aliased_outputs_bytes)" "$(sj $A .plan.non_aliased_outputs_bytes)"
	has "$d" "codes-gone: .*no-donation"
	tsv_match "$d"
fi

# 3. no-donation against temp-fragmentation's jit_train_step: still short.
B=no-donation A=temp-fragmentation
if d=$(export_pair $B $A); then
	need=$(sj $A .plan.need_bytes) capa=$(sj $A .runtime.capacity_bytes)
	short=$("$XPF" --base "$(cap $B)" --cat compare/diagnosis.txt "$(cap $A)" | sed -n 's/.*still short by \([^,]*\),.*/\1/p')
	[ "$short" = "2.35 GiB" ] && [ $((need - capa)) = 2528121756 ] && ok "still short by $short ($((need - capa)) bytes)" ||
		fail "still short: '$short', $((need - capa))"
	want "$d" still-short "$(sj $B .plan.need_bytes)" "$need"
	want "$d" temp "$(sj $B .plan.temp_bytes)" "$(sj $A .plan.temp_bytes)"
	tsv_match "$d"
fi

# 4. The leak fixed: grads-kept (+104 MiB per step) against foreign-arrays'
#    jit_step (same module, the outputs dropped; a device_put fills the pool).
B=grads-kept A=foreign-arrays
if d=$(export_pair $B $A); then
	has "$d" "^\[measured\] still-fits: jit_step still fits, 788\.0 MiB <= 2\.79 GiB .*need unchanged"
	has "$d" "codes-gone: 2 findings went away: fits, growth-per-execution"
	has "$d" "codes-new: .*foreign-live-arrays"
	want "$d" pool-peak "$(sj $B .runtime.peak_in_window_bytes)" "$(sj $A .runtime.peak_in_window_bytes)"
	tsv_match "$d"
fi

# 5. A capture against itself: one line, nothing changed, every delta 0.
for s in grads-kept attention-too-big; do
	out=$("$XPF" --base "$(cap $s)" --cat compare/diagnosis.txt "$(cap $s)")
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && printf '%s' "$out" | grep -q '^\[read\] nothing-changed: ' &&
		ok "$s against itself: $out" || fail "$s against itself: $out"
	nz=$("$XPF" --base "$(cap $s)" --cat compare/modules.tsv "$(cap $s)" |
		awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^delta_/) c[i] = 1; next } { r++; for (i in c) if ($i != 0) n++ } END { print (r ? n + 0 : "no rows") }')
	[ "$nz" = 0 ] && ok "$s against itself: every delta 0 in modules.tsv" || fail "$s against itself: $nz deltas not 0"
	j=$("$XPF" --base "$(cap $s)" --cat compare/diagnosis.json "$(cap $s)" | jq -c '[.nothing_changed, (.changes | length)]')
	[ "$j" = "[true,0]" ] && ok "$s against itself: diagnosis.json $j" || fail "$s against itself: diagnosis.json $j"
done

# 6. Other CAPTURE kinds: a run directory of several hosts on both sides
#    (compare/hosts/<host>/), and against a single capture.
out=$("$XPF" --base "$(cap multi-host)" --cat compare/hosts/worker-1/diagnosis.txt "$(cap multi-host)")
printf '%s' "$out" | grep -q '^\[read\] nothing-changed: .* -> base/hosts/worker-1/diagnosis.txt, hosts/worker-1/diagnosis.txt, compare/hosts/worker-1/modules.tsv$' &&
	ok "multi-host against itself: $out" || fail "multi-host against itself: $out"
if d=$(export_pair multi-host multi-host); then
	tsv_match "$d" hosts/worker-0/ hosts/worker-0/
	[ -f "$d/base/hosts/worker-0/diagnosis.txt" ] && [ -f "$d/base/README" ] && ok "base/ holds the baseline's tree" ||
		fail "base/ lacks the baseline's tree"
fi
out=$("$XPF" --base "$(cap no-runtime)" --cat compare/diagnosis.txt "$(cap attention-too-big)")
printf '%s' "$out" | grep -q '^\[read\] modules-new: 1 module new (only after): jit_step(2811)' &&
	printf '%s' "$out" | grep -q '^\[read\] modules-gone: 1 module gone (only in the baseline): jit_mlp_step(901)' &&
	ok "unmatched modules listed as new/gone" || fail "new/gone: $out"
"$XPF" --base "$(cap no-runtime)" --cat compare/modules.tsv "$(cap attention-too-big)" | cut -f1-4 | tail -n +2 >"$tmp/m"
[ "$(cat "$tmp/m")" = "$(printf 'jit_step\tnew\t\tjit_step(2811)\njit_mlp_step\tgone\tjit_mlp_step(901)\t')" ] &&
	ok "modules.tsv: new then gone" || fail "modules.tsv new/gone: $(cat "$tmp/m")"

# 6b. Several modules of one name (issue 38): by parameter shapes, then in
#     order.  The baseline's jit_many(1101..1150) take f32[1]..f32[50], those
#     of ids 1110, 1120, ..., 1150 unreadable (their HloProto cut short);
#     after's jit_many(1101..1150) take f32[75]..f32[26], id 1176 - d holding
#     f32[d].  By hand: after's f32[d], d = 26..50 but 30, 40, 50, pairs by
#     shapes with the baseline's 1100 + d (22 pairs); the rest in order: after's
#     1101..1125 with the baseline's 1101..1125, then 1126, 1136, 1146 with
#     1130, 1140, 1150.  Eager's 39 op modules (13 of each of three names, all
#     of one shape) pair by shapes with themselves, jit_einsum by name.
"$MK" eager --modules 50,broken=10 "$tmp/caps/many-base" >/dev/null &&
	"$MK" eager --modules 50,from=25,reverse "$tmp/caps/many-after" >/dev/null ||
	{ echo "cannot build the --modules captures"; exit 1; }
{
	for d in $(seq 26 50); do
		case $d in 30 | 40 | 50) ;; *) echo "jit_many($((1100 + d))) jit_many($((1176 - d))) shapes" ;; esac
	done
	for i in $(seq 1101 1125); do echo "jit_many($i) jit_many($i) order"; done
	echo "jit_many(1130) jit_many(1126) order"
	echo "jit_many(1140) jit_many(1136) order"
	echo "jit_many(1150) jit_many(1146) order"
} | sort >"$tmp/want"
"$XPF" --base "$(cap many-base)" --cat compare/modules.tsv "$(cap many-after)" 2>/dev/null >"$tmp/m"
awk -F'\t' '$1 == "jit_many" { print $3, $4, $2 }' "$tmp/m" | sort >"$tmp/got"
cmp -s "$tmp/want" "$tmp/got" && ok "jit_many: 22 pairs by shapes, 28 in order, as derived" ||
	fail "jit_many pairs: $(diff "$tmp/want" "$tmp/got" | head -c 600)"
got=$(awk -F'\t' 'NR > 1 && $1 != "jit_many" { n[$2]++; if ($2 != "name" && $3 != $4) bad++ }
	END { printf "%d shapes, %d name, %d new, %d gone, %d crossed", n["shapes"], n["name"], n["new"], n["gone"], bad }' "$tmp/m")
[ "$got" = "39 shapes, 1 name, 0 new, 0 gone, 0 crossed" ] && ok "eager's modules: $got" || fail "eager's modules: $got"

# 6c. Thousands of modules of one name (a retracing loop, eager op-by-op
#     programs) are matched in time linear in them: every pair was compared
#     before (30,000 reversed took minutes), now seconds.  A hang guard, not
#     a measure (bench/README has the figures).
"$MK" eager --modules 30000 "$tmp/caps/many30k-base" >/dev/null &&
	"$MK" eager --modules 30000,reverse "$tmp/caps/many30k-after" >/dev/null ||
	{ echo "cannot build the 30,000-module captures"; exit 1; }
out=$(timeout 120 "$XPF" --base "$(cap many30k-base)" --cat compare/modules.tsv "$(cap many30k-after)" |
	awk -F'\t' 'NR > 1 { n[$2]++ } END { printf "%d shapes, %d name, %d order", n["shapes"], n["name"], n["order"] }')
[ "$out" = "30039 shapes, 1 name, 0 order" ] && ok "30,000 modules of one name, reversed: $out" ||
	fail "30,000 modules of one name: '$out' (timed out?)"
rm -f "$tmp/caps/many30k-"*

# 7. The generated README says what base/ and compare/ are; compare/README
#    describes every file of compare/; none of it without --base.
d="$tmp/out/attention-too-big-grads-kept"
grep -q '^compare/$' "$d/README" && grep -q '^base/$' "$d/README" && ok "README lists base/ and compare/" ||
	fail "README lacks base/ or compare/"
for f in diagnosis.txt diagnosis.json modules.tsv peak_buffers.tsv allocators.tsv; do
	grep -q "^$f\$" "$d/compare/README" || fail "compare/README lacks $f"
done
"$XPF" --cat README "$(cap grads-kept)" | grep -q 'compare' && fail "README without --base mentions compare/"
"$XPF" --base "$tmp/absent.xplane.pb" --cat compare/diagnosis.txt "$(cap grads-kept)" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q 'absent.xplane.pb: cannot open' "$tmp/err" && ok "a missing baseline: exit 2" ||
	fail "a missing baseline: exit $rc: $(cat "$tmp/err")"
"$XPF" --base "$(cap grads-kept)" --check "$(cap grads-kept)" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && ok "--base with --check: usage error" || fail "--base with --check: $(cat "$tmp/err")"

# 7b. Bytes in use past 2^63 (issue 38: compare's growth overflowed int64,
#     a UBSan report): the exact figures, both ways, nothing on stderr.
big="$here/bad/cases/alloc-in-use-2p63.xplane.pb" okb="$here/bad/cases/ok-base.xplane.pb"
out=$("$XPF" --base "$big" --cat compare/diagnosis.json "$okb" 2>"$tmp/err" |
	jq -c '.changes[] | select(.code == "growth-per-execution") | .figures')
[ "$out" = '{"after_bytes":0,"before_bytes":-6,"delta_bytes":6}' ] && [ ! -s "$tmp/err" ] &&
	ok "in use past 2^63: growth -6 -> 0" || fail "in use past 2^63: $out $(head -c 300 "$tmp/err")"
"$XPF" --base "$okb" --cat compare/diagnosis.txt "$big" >"$tmp/big.txt" 2>"$tmp/err"
grep -qF 'mean rise per execution: 0 B (it ran once) -> -6 B: -6 B (-6 bytes)' "$tmp/big.txt" && [ ! -s "$tmp/err" ] &&
	ok "in use past 2^63: growth 0 -> -6" || fail "in use past 2^63: $(head -c 300 "$tmp/err") $(cat "$tmp/big.txt")"

# 7c. A side whose growth is unknown (issue 38: it read "0 B (it ran once)"):
#     a bare HloProto, a runtime that cannot be read, no allocator events;
#     ok-grows' jit_f(1) runs twice, in use 1024 then 3072 bytes at its
#     starts (+2048 a run).  No change with figures from unknown; a capacity
#     that is not a pool's says why.
okg="$here/bad/cases/ok-grows.xplane.pb" hlo="$here/bad/cases/ok-hlo.hlo.pb"
broken="$here/bad/cases/flip-0.xplane.pb" nopool="$here/bad/cases/alloc-no-allocator.xplane.pb"
grow_line() { "$XPF" --base "$1" --cat compare/diagnosis.txt "$2" 2>/dev/null | grep '^\[measured\] growth-per-execution: '; }
for c in "$hlo|$okg|unknown (a bare HloProto, no allocator events) -> +2.0 KiB" \
	"$okg|$hlo|+2.0 KiB -> unknown (a bare HloProto, no allocator events)" \
	"$broken|$okg|unknown (its runtime cannot be read) -> +2.0 KiB" \
	"$nopool|$okg|unknown (no allocator events) -> +2.0 KiB"; do
	IFS='|' read -r b a want <<<"$c"
	got=$(grow_line "$b" "$a")
	[ "$got" = "[measured] growth-per-execution: in use at the start of jit_f's executions, mean rise per execution: $want -> base/runtime/executions.tsv, runtime/executions.tsv" ] &&
		ok "growth from $(basename "$b") to $(basename "$a"): $want" ||
		fail "growth from $(basename "$b") to $(basename "$a"): '$got', want '... $want'"
done
out=$("$XPF" --base "$hlo" --cat compare/diagnosis.json "$okg" | jq -c '.changes[] | select(.code == "growth-per-execution") | .figures')
[ "$out" = "{}" ] && ok "growth from unknown: no figures" || fail "growth from unknown: figures $out"
out=$(grow_line "$(cap no-runtime)" "$(cap grads-kept)")
[ -z "$out" ] && ok "no growth line against a baseline without allocator events and no matched module" ||
	fail "a growth line from unknown: $out"
out=$("$XPF" --base "$broken" --cat compare/diagnosis.txt "$okg" 2>/dev/null | sed -n 2p)
printf '%s' "$out" | grep -qF "capacity -79.00 GiB (-84825601024 bytes, -98.7%); the baseline has a runtime that cannot be read (capture/errors.txt), so its capacity is from the device plane's memory_size" &&
	printf '%s' "$out" | grep -qF -- "-> base/modules/jit_f(1)/plan.json, modules/jit_f(1)/plan.json, diagnosis.txt, base/capture/errors.txt" &&
	ok "a broken baseline runtime: its capacity change says why" || fail "a broken baseline runtime: $out"

# 8. The mount: the same files, exact sizes (skipped without FUSE).
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null && "$XPF" --help >/dev/null; then
	mkdir "$tmp/mnt"
	if timeout 60 "$XPF" --base "$(cap attention-too-big)" "$(cap grads-kept)" "$tmp/mnt" 2>"$tmp/err"; then
		for f in compare/diagnosis.txt compare/modules.tsv compare/peak_buffers.tsv base/diagnosis.txt; do
			cmp -s "$tmp/mnt/$f" "$tmp/out/attention-too-big-grads-kept/$f" &&
				[ "$(stat -c %s "$tmp/mnt/$f")" = "$(wc -c <"$tmp/mnt/$f")" ] && ok "mount: $f" ||
				fail "mount: $f differs from --export's or its size is not exact"
		done
		fusermount3 -u "$tmp/mnt" || fail "unmount"
	elif grep -q "built without FUSE\|fuse: device not found\|Operation not permitted" "$tmp/err"; then
		echo "skipping the mount: $(cat "$tmp/err")"
	else
		fail "mount: $(cat "$tmp/err")"
	fi
fi

echo "$fails failures"
[ "$fails" -eq 0 ]
