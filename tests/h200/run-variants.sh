#!/bin/bash
# Makes the captures of variants.py on a machine with an NVIDIA GPU and JAX, as
# captures/jax-h200/run.sh makes its own: each in its own process, 3 at a time,
# a 2.8 GiB BFC pool, XLA's dump of the step.
# usage: run-variants.sh SCEN_DIR OUTDIR [NAME...]   (SCEN_DIR holds jax-h200's scen.py)
# OUTDIR/<name>.xplane.pb.gz, <name>.facts.json, <name>.hlo.pb.gz; OUTDIR/log.txt
here=$(cd "$(dirname "$0")" && pwd)
SCEN=${1:?usage: run-variants.sh SCEN_DIR OUTDIR [NAME...]}
OUT=${2:?usage: run-variants.sh SCEN_DIR OUTDIR [NAME...]}
shift 2
W=$(mktemp -d)
cp "$SCEN/scen.py" "$here/variants.py" "$W/"
mkdir -p "$OUT"
one() {
	n=$1 d=$W/$n
	mkdir -p "$d"
	XLA_PYTHON_CLIENT_MEM_FRACTION=0.02 \
		XLA_FLAGS="--xla_dump_to=$d/dump --xla_dump_hlo_as_proto --xla_dump_hlo_module_re=.*step.*" \
		timeout 150 python3 "$W/variants.py" "$n" "$d" >"$d/stdout.txt" 2>"$d/stderr.txt"
	echo "$n rc=$? $(tail -1 "$d/stdout.txt")"
	x=$(find "$d/trace" -name '*.xplane.pb' | head -1)
	[ -n "$x" ] && gzip -c "$x" >"$OUT/$n.xplane.pb.gz"
	cp "$d/facts.json" "$OUT/$n.facts.json" 2>/dev/null
	h=$(find "$d/dump" -name '*after_optimizations*.pb' 2>/dev/null | sort | head -1)
	[ -n "$h" ] && gzip -c "$h" >"$OUT/$n.hlo.pb.gz"
	tail -3 "$d/stderr.txt" | cut -c1-300
}
export -f one
export W OUT
list=("$@")
[ ${#list[@]} -gt 0 ] || list=(v-leak-grads v-retrace-eval v-compile-full v-lm6-loop v-lm6-scan)
printf '%s\n' "${list[@]}" | xargs -P 3 -I{} bash -c 'one {}' 2>&1 | tee "$OUT/log.txt"
