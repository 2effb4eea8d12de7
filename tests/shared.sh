# Sourced by the shell tests that read ../shared/captures (XPF_SHARED).
# need_shared DIR: go on when DIR/README.md is there; else exit 77 (SKIP),
# or 1 in CI (CI=true), where ../shared must be beside the clone.
need_shared() {
	[ -f "$1/README.md" ] && return 0
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $1 is absent (CI needs ../shared beside the clone)"
		exit 1
	fi
	echo "SKIP: $1 is absent"
	exit 77
}
