# shellcheck shell=bash
# Shared by the mount tests (test-mount.sh, test-mount-user.sh,
# tests/stress/tsan-mount.sh): what they mount goes in `mounts`, the
# daemons they start in `pids`.
pids=()
mounts=()

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
