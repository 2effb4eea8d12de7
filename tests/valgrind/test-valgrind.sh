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

checked() { # LABEL LOG ARGS...: one memcheck run and its verdict
	local label=$1 log=$2 rc
	shift 2
	vg "$log" "$@"
	rc=$?
	if [ "$rc" -eq 99 ] || [ "$rc" -ge 128 ] || [ -s "$log" ]; then
		echo "FAIL: $label (exit $rc):"
		head -n 40 "$log"
		fails=$((fails + 1))
	else
		echo "ok: $label (exit $rc; memcheck clean)"
	fi
}

one() { # CAPTURE
	local c=$1 name
	name=$(basename "$c")
	if [ ! -e "$c" ]; then
		echo "skipping $name: absent"
		return
	fi
	n=$((n + 1))
	checked "--export $name" "$tmp/$name.export.log" --export "$tmp/out-$n" "$c"
	rm -rf "$tmp/out-$n"
	checked "--check $name" "$tmp/$name.check.log" --check "$c"
}

B=$here/bad/cases
for c in "$B/ok-base.xplane.pb" "$B/ok-hlo.hlo.pb" "$B/md-dangling-event.xplane.pb" \
	"$B/trunc-hlo-half.xplane.pb" "$B/ba-negative-sizes.xplane.pb" "$B/name-collide.xplane.pb" \
	"$B/hlo-deep-shape-100.xplane.pb" "$B/trunc-file-half.xplane.pb" \
	"$S/mi300x-jax08-gemm.xplane.pb" "$S/mi300x-conv-run/jit_forward_3d_conv_15_.hlo_proto.pb" \
	"$S/bad/op-stats-not-xspace.pb"; do
	one "$c"
done
echo "$n captures, $fails failures"
[ "$n" -gt 0 ] || { echo "FAIL: no capture was checked"; exit 1; }
[ "$fails" -eq 0 ]
