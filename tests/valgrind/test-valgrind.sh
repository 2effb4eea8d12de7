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

one() { # CAPTURE
	local c=$1 name rc
	name=$(basename "$c")
	if [ ! -e "$c" ]; then
		echo "skipping $name: absent"
		return
	fi
	n=$((n + 1))
	vg "$tmp/$name.export.log" --export "$tmp/out-$n" "$c"
	rc=$?
	if [ "$rc" -eq 99 ] || [ "$rc" -ge 128 ] || [ -s "$tmp/$name.export.log" ]; then
		echo "FAIL: --export $name (exit $rc):"
		head -n 40 "$tmp/$name.export.log"
		fails=$((fails + 1))
	else
		echo "ok: --export $name (exit $rc; memcheck clean)"
	fi
	rm -rf "$tmp/out-$n"
	vg "$tmp/$name.check.log" --check "$c"
	rc=$?
	if [ "$rc" -eq 99 ] || [ "$rc" -ge 128 ] || [ -s "$tmp/$name.check.log" ]; then
		echo "FAIL: --check $name (exit $rc):"
		head -n 40 "$tmp/$name.check.log"
		fails=$((fails + 1))
	else
		echo "ok: --check $name (exit $rc; memcheck clean)"
	fi
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
[ "$fails" -eq 0 ]
