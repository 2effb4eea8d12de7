#!/usr/bin/env bash
# The concurrency stress test (stress.c) under ThreadSanitizer: 16 threads
# reading every file of the report at once must race on nothing; then a
# TSan-built xplanefs mounted under concurrent readers (tsan-mount.sh).
#   tests/stress/tsan.sh [CAPTURE...]     (build in build-tsan/)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
S=../shared/captures
if [ ! -f build-tsan/build.ninja ]; then
	meson setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized \
		>/dev/null
elif meson introspect build-tsan --buildoptions | python3 -c 'import json, sys
sys.exit(not any(o["name"] == "fuse" and o["value"] == "disabled" for o in json.load(sys.stdin)))'; then
	# build-tsan dirs made before the mount was covered had FUSE off
	meson configure build-tsan -Dfuse=auto >/dev/null
fi
ninja -C build-tsan tests/stress/stress src/fs/xplanefs >/dev/null
[ $# -gt 0 ] || set -- tests/bad/cases/ok-base.xplane.pb tests/bad/cases/md-dangling-event.xplane.pb \
	tests/bad/cases/trunc-hlo-half.xplane.pb "$S/mi300x-jax08-gemm.xplane.pb" "$S/mi300x-conv-run"
# setarch -R: TSan of this toolchain needs ASLR off on newer kernels.
run=()
setarch "$(uname -m)" -R true 2>/dev/null && run=(setarch "$(uname -m)" -R)
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "${run[@]}" build-tsan/tests/stress/stress "$@"
# Again with the runtime's host lines cut into chunks that three threads
# read and merge (XPF_THREADS drops the size floor): the threaded scan
# under TSan too (issue 23).
XPF_THREADS=3 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "${run[@]}" \
	build-tsan/tests/stress/stress "$@"
# The mount (issue 23): the multi-threaded FUSE loop under concurrent
# readers, a fresh mount per round; a small capture and a run directory
# (many host lines, cut into chunks with XPF_THREADS=3).  Exit 77 where no
# mount is possible (no /dev/fuse, no fusermount3, no FUSE in the build).
rc=0
tests/stress/tsan-mount.sh build-tsan/src/fs/xplanefs tests/bad/cases/ok-base.xplane.pb \
	"$S/mi300x-conv-run" || rc=$?
if [ "$rc" -eq 77 ]; then
	echo "tsan.sh: the mount under TSan was skipped (above: why)"
elif [ "$rc" -ne 0 ]; then
	exit "$rc"
fi
