# Shared by scripts/test and scripts/demo: install what is missing, build.
# shellcheck shell=bash

XPF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XPF_PACKAGES=(meson ninja-build pkg-config gcc protobuf-c-compiler libprotobuf-c-dev zlib1g-dev groff-base
	libfuse3-dev fuse3 libjansson-dev libcmocka-dev protobuf-compiler jq libxml2-utils
	valgrind time clang-format mandoc)

say() { printf '==> %s\n' "$*" >&2; }

xpf_install() {
	local missing=() p
	for p in "${XPF_PACKAGES[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing ${missing[*]}"
	local sudo=
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || true
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# xpf_build DIR [meson options...]: quiet when it works; when it fails,
# the compiler's (or meson's) own messages, then a non-zero exit.
xpf_build() {
	local dir=$1 log
	shift
	log=$(mktemp)
	if [ ! -f "$XPF_ROOT/$dir/build.ninja" ]; then
		meson setup "$XPF_ROOT/$dir" "$XPF_ROOT" "$@" >"$log" 2>&1 || { xpf_build_failed "$log"; return 1; }
	else
		meson configure "$XPF_ROOT/$dir" "$@" >"$log" 2>&1 || { xpf_build_failed "$log"; return 1; }
	fi
	ninja -C "$XPF_ROOT/$dir" >"$log" 2>&1 || { xpf_build_failed "$log"; return 1; }
	rm -f "$log"
}

xpf_build_failed() { # LOG
	say "the build failed; its messages:"
	grep -v '^\[[0-9]*/[0-9]*\] ' "$1" | tail -n 60 >&2
	rm -f "$1"
}
