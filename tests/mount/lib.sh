# shellcheck shell=bash
# Shared by the mount tests (test-mount.sh, test-mount-user.sh,
# tests/stress/tsan-mount.sh): what they mount goes in `mounts`, the
# daemons they start in `pids`; $T (seconds any single check may take) is
# the caller's.
pids=()
mounts=()

to() { timeout -k 5 "$T" "$@"; }

# A child that has exited but not been waited for is a zombie: not alive.
alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $s in Z*) return 1 ;; esac
	return 0
}

# xpf_wait_mounted MOUNTPOINT PID: until MOUNTPOINT is mounted, PID dies or
# $T seconds pass; 0 when it is mounted.
xpf_wait_mounted() {
	local i
	for ((i = 0; i < T * 10; i++)); do
		mountpoint -q "$1" && return 0
		alive "$2" || break
		sleep 0.1
	done
	mountpoint -q "$1"
}

# Leave nothing mounted or running: unmount (lazily), kill the daemons,
# then detach whatever a dead daemon left (root only; silent otherwise).
xpf_mount_cleanup() {
	local m p
	for m in "${mounts[@]}"; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for m in "${mounts[@]}"; do
		mountpoint -q "$m" 2>/dev/null && umount -l "$m" 2>/dev/null
	done
	return 0
}
