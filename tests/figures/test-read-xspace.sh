#!/usr/bin/env bash
# The independent reader (read-xspace.py) held to the figures that
# ../shared/captures/README.md read with yet another decoder: the tests take
# expected values from this reader where the README gives none, so it must
# agree with the README where it does.  Every figure below is the README's.
# Exit 77 (SKIP) when the captures or python3 are absent; in CI (CI=true) a
# missing ../shared is an error.
set -u
R=$(dirname "$0")/read-xspace.py
S=${XPF_SHARED:-../shared}/captures
. "$(dirname "$0")/../shared.sh"
need_shared "$S"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # WHAT GOT WANT
	if [ "$2" = "$3" ]; then
		echo "ok: $1: $2"
	else
		echo "FAIL: $1: read-xspace.py gives '$2', the README '$3'"
		fails=$((fails + 1))
	fi
}
# kind ALLOCATOR: "allocations/deallocations" of one allocator in events.tsv
kind() {
	awk -F'\t' -v a="allocator_name=$1" '
		index($5, a " ") || $5 ~ a "$" { n[$4]++ }
		END { printf "%d/%d", n["MemoryAllocation"], n["MemoryDeallocation"] }' "$tmp/ev"
}
# peak ALLOCATOR: the largest peak_bytes_in_use of its events
peak() {
	awk -F'\t' -v a="allocator_name=$1" '
		(index($5, a " ") || $5 ~ a "$") && match($5, /peak_bytes_in_use=[0-9]+/) {
			v = substr($5, RSTART + 18, RLENGTH - 18) + 0; if (v > m) m = v }
		END { printf "%.0f", m }' "$tmp/ev"
}

# mi300x-jax08-attention: "/host:CPU: 5 lines, 4,275 events, 144 MemoryAllocation +
# 144 MemoryDeallocation (GPU_0_bfc 126/126, xla_gpu_host_bfc 18/18); max
# peak_bytes_in_use of GPU_0_bfc = 595,591,680"; "jit_matmul(59): 7
# allocations, total 201,326,604 bytes".
c=$S/mi300x-jax08-attention.xplane.pb
python3 "$R" events "$c" >"$tmp/ev" || fails=$((fails + 1))
check "attention: /host:CPU events" "$(wc -l <"$tmp/ev")" 4275
check "attention: /host:CPU lines" "$(cut -f1 "$tmp/ev" | sort -u | wc -l)" 5
check "attention: GPU_0_bfc allocations/deallocations" "$(kind GPU_0_bfc)" 126/126
check "attention: xla_gpu_host_bfc allocations/deallocations" "$(kind xla_gpu_host_bfc)" 18/18
check "attention: GPU_0_bfc max peak_bytes_in_use" "$(peak GPU_0_bfc)" 595591680
python3 "$R" allocations "$c" >"$tmp/al" || fails=$((fails + 1))
check "attention: jit_matmul(59) allocations, bytes" \
	"$(awk -F'\t' '$1 == "jit_matmul(59)" { n++; b += $3 } END { print n ", " b }' "$tmp/al")" \
	"7, 201326604"
check "attention: modules with buffer assignment" "$(cut -f1 "$tmp/al" | sort -u | wc -l)" 31

# tf-v100-multiworker: "1,859 MemoryAllocation vs 634 MemoryDeallocation:
# GPU_4_bfc 761/208, GPU_6_bfc 761/208, GPU_1_bfc 19/0, gpu_host_bfc 318/218.
# Max peak_bytes_in_use: GPU_6_bfc 6,210,111,488."
c=$S/tf-v100-multiworker.xplane.pb
python3 "$R" events "$c" >"$tmp/ev" || fails=$((fails + 1))
for a in GPU_4_bfc:761/208 GPU_6_bfc:761/208 GPU_1_bfc:19/0 gpu_host_bfc:318/218; do
	check "tf-v100: ${a%%:*} allocations/deallocations" "$(kind "${a%%:*}")" "${a#*:}"
done
check "tf-v100: GPU_6_bfc max peak_bytes_in_use" "$(peak GPU_6_bfc)" 6210111488

[ "$fails" -eq 0 ] && echo "all checks passed" || echo "$fails checks failed"
[ "$fails" -eq 0 ]
