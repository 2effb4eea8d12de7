#!/usr/bin/env bash
# The concurrency stress test (stress.c) under ThreadSanitizer: 16 threads
# reading every file of the report at once must race on nothing.
#   tests/stress/tsan.sh [CAPTURE...]     (build in build-tsan/)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
S=../shared/captures
if [ ! -f build-tsan/build.ninja ]; then
	meson setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized \
		-Dfuse=disabled >/dev/null
fi
ninja -C build-tsan tests/stress/stress >/dev/null
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
