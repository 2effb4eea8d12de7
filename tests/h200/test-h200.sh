#!/usr/bin/env bash
# Real OOM captures of today's JAX (../shared/captures/jax-h200, issue 36):
# every expected value comes from JAX's own figures (<name>.facts.json:
# memory_analysis(), the steps that ran, the exception) or from the table of
# that folder's README, never from xplanefs's output.
#   - the plan of the step equals memory_analysis() field by field;
#   - executions are the program's calls of the step (autotuner runs are the
#     compilation's): steps that ran, plus the call that failed;
#   - each capture's codes are the README table's, and a program that failed
#     gets no `fits` line;
#   - the captures are read as they are kept, gzip'd: each checks clean
#     (--check exits 0: no false error), and the tree of a .gz is the tree
#     of the file it decompresses to, byte for byte (SPEC §2).
# Exit 77 (SKIP) when the captures are absent; in CI (CI=true) that is an error.
set -u
XPF=$1
S=${XPF_SHARED:-../shared}/captures/jax-h200
. "$(dirname "$0")/../shared.sh"
need_shared "$S"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
	return 1
}

# The capture as it is kept: gzip'd, read as such.
cap() { # NAME -> path of the capture
	echo "$S/$1.xplane.pb.gz"
}

# plan NAME: the step's plan (XLA's dump, the same module as in the capture)
# against memory_analysis(), and the capture's module of that name too.
plan() {
	local n=$1 fn want got
	want=$(jq -c ".memory_analysis | to_entries[0].value | [.argument_size_in_bytes, .output_size_in_bytes,
		.alias_size_in_bytes, .temp_size_in_bytes, .peak_memory_in_bytes,
		.total_allocation_bytes]" "$S/$n.facts.json")
	# the step's name: XLA's dump names its module (jit_train_step)
	fn=$("$XPF" --cat focus/plan.json "$S/$n.hlo.pb.gz" | jq -r '.module | sub("\\(.*"; "")')
	got=$("$XPF" --cat focus/plan.json "$S/$n.hlo.pb.gz" | jq -c '[.parameters.bytes,
		.outputs.bytes, .parameters.donated_bytes, .temp.bytes, .heap_peak.bytes, .total_bytes]')
	[ "$got" = "$want" ] || { fail "$n: plan of $fn [params, outputs, aliased, temp, peak, total] $got, XLA says $want"; return; }
	# the capture's own module of the step: the same figures (index.tsv)
	got=$("$XPF" --cat modules/index.tsv "$(cap "$n")" | awk -F'\t' -v f="$fn(" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		index($2, f) == 1 { print "[" $c["parameters_bytes"] "," $c["temp_bytes"] "," $c["heap_peak_bytes"] "]"; exit }')
	local want2
	want2=$(jq -c "[.[0], .[3], .[4]]" <<<"$want")
	[ "$got" = "$want2" ] || { fail "$n: the capture's $fn [params, temp, peak] $got, XLA says $want2"; return; }
	echo "ok: $n: plan of $fn equals memory_analysis() $want"
}

# calls NAME: executions of the step = steps that ran (+1: the call that
# failed at run time, launched = no); a compile that failed adds none.
calls() {
	local n=$1 fn steps err want got last
	# the step: jit_ and the function scen.py jits (train_step_b512 is
	# retrace's train_step at batch 512; foreign's never compiled)
	fn=jit_$(jq -r '.memory_analysis | keys[0] // "train_step" | sub("_b[0-9]+$"; "")' "$S/$n.facts.json")
	steps=$(jq '.steps | length' "$S/$n.facts.json")
	err=$(jq -r '.error // ""' "$S/$n.facts.json")
	want=$steps
	case $err in *"Failed to get configs"*) ;; ?*) want=$((steps + 1)) ;; esac
	"$XPF" --cat runtime/executions.tsv "$(cap "$n")" >"$tmp/x.tsv"
	got=$(awk -F'\t' -v f="$fn(" 'index($3, f) == 1' "$tmp/x.tsv" | wc -l)
	[ "$got" -eq "$want" ] || { fail "$n: $got executions of $fn, the program called it $want times"; return; }
	if [ "$want" -gt "$steps" ]; then
		last=$(awk -F'\t' -v f="$fn(" 'index($3, f) == 1 { l = $7 } END { print l }' "$tmp/x.tsv")
		[ "$last" = no ] || { fail "$n: the failing call of $fn launched: '$last', want no"; return; }
	fi
	echo "ok: $n: $got executions of $fn ($steps steps ran; error: ${err:0:40})"
}

# codes NAME CODE... : the README table's codes are in diagnosis.json; a
# failed program gets no fits.  A leading ! means "must not be there".
codes() {
	local n=$1 c have err
	shift
	have=$("$XPF" --cat diagnosis.json "$(cap "$n")" | jq -r '.findings[].code' | sort -u | tr '\n' ' ')
	for c in "$@"; do
		case $c in
		!*) [[ " $have" != *" ${c#!} "* ]] || { fail "$n: has ${c#!}; codes: $have"; return; } ;;
		*) [[ " $have" == *" $c "* ]] || { fail "$n: lacks $c; codes: $have"; return; } ;;
		esac
	done
	err=$(jq -r '.error // ""' "$S/$n.facts.json")
	if [ -n "$err" ] && [[ " $have" == *" fits "* ]]; then
		fail "$n: the program failed ($err) but the diagnosis says fits"
		return
	fi
	echo "ok: $n: codes $have"
}

# check NAME: decodes clean, gzip'd as it is (its
# /host:__ScopeRangeCallStack__ plane's scope ids are no dangling ids)
check() {
	local n=$1 out
	if ! out=$("$XPF" --check "$(cap "$n")" 2>&1 >/dev/null); then
		fail "$n: --check of the .gz fails: $out"
		return
	fi
	if ! "$XPF" --cat capture/errors.txt "$(cap "$n")" | grep -q '^decoder: every plane'; then
		fail "$n: capture/errors.txt names a decoder error"
		return
	fi
	echo "ok: $n: --check of the .gz exits 0; errors.txt: every plane decodes"
}

# same NAME: the tree of the .gz is the tree of the file zcat makes of it
same() {
	local n=$1
	mkdir -p "$tmp/plain"
	zcat "$(cap "$n")" >"$tmp/plain/$n.xplane.pb"
	"$XPF" --export "$tmp/gz-$n" "$(cap "$n")" &&
		"$XPF" --export "$tmp/plain-$n" "$tmp/plain/$n.xplane.pb" || {
		fail "$n: --export failed"
		return
	}
	if ! diff -r "$tmp/gz-$n" "$tmp/plain-$n" >"$tmp/diff"; then
		fail "$n: the .gz's tree differs from the plain file's: $(head -c 300 "$tmp/diff")"
		return
	fi
	echo "ok: $n: the .gz's tree is the plain file's ($(find "$tmp/gz-$n" -type f | wc -l) files)"
	rm -rf "$tmp/gz-$n" "$tmp/plain-$n" "$tmp/plain/$n.xplane.pb"
}

ncap=0
for f in "$S"/*.facts.json; do
	n=$(basename "$f" .facts.json)
	[ -f "$S/$n.hlo.pb.gz" ] && plan "$n"
	calls "$n"
	check "$n"
	ncap=$((ncap + 1))
done
[ "$ncap" -ge 16 ] || fail "$ncap captures in $S, the README lists 16"
same fits
same leak
same attn

# The README's table, code by code.
codes attn plan-exceeds-pool never-launched mostly-forward
codes attn-remat fits
codes attn-half fits
codes attn-scan plan-exceeds-pool never-launched mostly-forward
codes attn-scan-remat fits
codes adam-nodonate plan-exceeds-pool no-donation never-launched
codes adam-donate fits '!no-donation'
codes leak growth-per-execution never-launched '!unexplained-oom'
codes leak-fixed fits '!growth-per-execution'
codes retrace compile-oom
codes foreign compile-oom foreign-live-arrays
codes convert fits param-convert-copy
codes fits fits
codes fits-cuda-async missing-runtime fits
codes lm-bf16-nopre plan-exceeds-pool never-launched mostly-forward silent-upcast
codes flax-lm plan-exceeds-pool never-launched mostly-forward

# leak: in use at each call's start rises by exactly one step's logits,
# f32[1024,32768] = 134,217,728 B (README), 1.00x the non-aliased output
g=$("$XPF" --cat diagnosis.json "$(cap leak)" |
	jq '.findings[] | select(.code == "growth-per-execution") | .figures.growth_bytes')
[ "$g" = 134217728 ] && echo "ok: leak: growth per execution $g" ||
	fail "leak: growth per execution '$g', want 134217728"

# retrace: the failed compile is of jit_train_step, after a module of that
# name ran (a retrace); no module of it
"$XPF" --cat runtime/compiles.tsv "$(cap retrace)" >"$tmp/c.tsv"
last=$(awk -F'\t' '$1 == "jit_train_step" { l = $2 "|" $5 } END { print l }' "$tmp/c.tsv")
if [ "$last" != "|no" ]; then
	fail "retrace: the last compile of jit_train_step: '$last', want no module, finished no"
elif ! "$XPF" --cat diagnosis.txt "$(cap retrace)" | grep -q "a retrace: jit_train_step("; then
	fail "retrace: compile-oom does not name the earlier module of jit_train_step"
else
	echo "ok: retrace: the last compilation of jit_train_step did not finish; a retrace"
fi

# retrace: the failed compile was for batch 32768 (README: "then called
# with batch 32768"); the earlier module ran at 512. The need there is
# scaled from the batch-512 module; XLA never said it, so only the batch
# and that a range was given are asserted.
nb=$("$XPF" --cat diagnosis.json "$(cap retrace)" |
	jq '.findings[] | select(.code == "compile-oom") | .figures.new_batch')
[ "$nb" = 32768 ] && echo "ok: retrace: the failed compile's batch $nb" ||
	fail "retrace: the failed compile's batch '$nb', want 32768"

# convert: the loop passes the same ws to every call (README): donation
# advice must say so, never simply "donate ws"
if "$XPF" --cat diagnosis.txt "$(cap convert)" | grep -q 'fix: donate the arguments'; then
	fail "convert: advises donating ws although the loop passes the same ws to every call"
elif ! "$XPF" --cat diagnosis.txt "$(cap convert)" | grep -q 'passes the same inputs to every call'; then
	fail "convert: the donation advice does not say the loop reuses its inputs"
else
	echo "ok: convert: donation advice says the loop reuses ws"
fi

# README's "Reading a diagnosis" quotes attn's diagnosis.txt: every line of
# the excerpt (indented 4, up to its "…") must be a line of today's output,
# so that the README cannot go stale when the output changes.
readme=$(dirname "$0")/../../README.md
"$XPF" --cat diagnosis.txt "$(cap attn)" >"$tmp/attn.txt"
awk '/^    # attn.xplane.pb: focus/ { on = 1 } on && /^    …$/ { exit } on && /^    / { print substr($0, 5) }' \
	"$readme" >"$tmp/excerpt.txt"
nx=$(wc -l <"$tmp/excerpt.txt")
stale=$(grep -cvxFf "$tmp/attn.txt" "$tmp/excerpt.txt")
if [ "$nx" -lt 20 ]; then
	fail "README: the attn excerpt has $nx lines (not found?)"
elif [ "$stale" -ne 0 ]; then
	fail "README: $stale of the attn excerpt's $nx lines are not in its diagnosis.txt: $(grep -vxFf "$tmp/attn.txt" "$tmp/excerpt.txt" | head -2)"
else
	echo "ok: README's attn excerpt: $nx lines, each in today's diagnosis.txt"
fi

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all jax-h200 checks passed"
