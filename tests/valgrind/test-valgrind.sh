#!/usr/bin/env bash
# No leaks, no invalid reads (SPEC §7): memcheck over `xplanefs --export` (the
# whole tree rendered) and `--check` on a few captures, good and broken.
# Skipped (77) where valgrind is absent or the binary is built with a
# sanitizer (the plain pass runs it; the ASan pass has LeakSanitizer).
#   test-valgrind.sh XPLANEFS
set -u
XPF=$1
here=$(cd "$(dirname "$0")/.." && pwd)
S=${XPF_SHARED:-$here/../../shared}/captures
command -v valgrind >/dev/null || { echo "skipping: valgrind is not installed"; exit 77; }
if grep -qa -m1 -e __asan_init -e __tsan_init "$XPF"; then
	echo "skipping: $XPF is built with a sanitizer"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0

vg() { # LOG ARGS...
	local log=$1
	shift
	valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite --error-exitcode=99 --track-origins=no --quiet \
		--log-file="$log" "$XPF" "$@" >/dev/null 2>"$log.stderr"
}

checked() { # LABEL LOG WANT ARGS...: one memcheck run and its verdict
	local label=$1 log=$2 want=$3 rc
	shift 3
	vg "$log" "$@"
	rc=$?
	if [ "$rc" -eq 99 ] || [ "$rc" -ge 128 ] || [ -s "$log" ]; then
		echo "FAIL: $label (exit $rc):"
		head -n 40 "$log"
		fails=$((fails + 1))
	elif [ "$rc" != "$want" ]; then
		echo "FAIL: $label exits $rc, want $want: $(head -c 300 "$log.stderr")"
		fails=$((fails + 1))
	else
		echo "ok: $label (exit $rc; memcheck clean)"
	fi
}

one() { # CAPTURE EXIT: the exit code of both --check and --export
	local c=$1 want=$2 name
	name=$(basename "$c")
	if [ ! -e "$c" ]; then
		echo "skipping $name: absent"
		return
	fi
	n=$((n + 1))
	checked "--export $name" "$tmp/$name.export.log" "$want" --export "$tmp/out-$n" "$c"
	rm -rf "$tmp/out-$n"
	checked "--check $name" "$tmp/$name.check.log" "$want" --check "$c"
}

B=$here/bad/cases
while read -r c want; do
	one "$c" "$want"
done <<EOF
$B/ok-base.xplane.pb 0
$B/ok-hlo.hlo.pb 0
$B/md-dangling-event.xplane.pb 3
$B/trunc-hlo-half.xplane.pb 3
$B/ba-negative-sizes.xplane.pb 0
$B/name-collide.xplane.pb 0
$B/hlo-deep-shape-100.xplane.pb 3
$B/trunc-file-half.xplane.pb 3
$B/gz-ok-base.xplane.pb.gz 0
$B/gz-ok-hlo.hlo.pb.gz 0
$B/gz-trunc-half.xplane.pb.gz 3
$B/gz-bad-crc.xplane.pb.gz 3
$S/mi300x-jax08-gemm.xplane.pb 0
$S/mi300x-conv-run/jit_forward_3d_conv_15_.hlo_proto.pb 0
$S/bad/op-stats-not-xspace.pb 3
EOF
echo "$n captures, $fails failures"
[ "$n" -gt 0 ] || { echo "FAIL: no capture was checked"; exit 1; }
[ "$fails" -eq 0 ]
