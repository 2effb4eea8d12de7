#!/usr/bin/env bash
# The unprivileged route of the mount (issue 23; test-mount.sh run as root
# only takes root's): xplanefs run as a user other than root mounts through
# the setuid fusermount3, and its mount goes away by each of
# `fusermount3 -u`, `xplanefs -u` (which, not being root, runs fusermount3 -u)
# and SIGTERM (libfuse then runs fusermount3 -u itself).  Each time the mount
# is the user's (user_id=), diagnosis.txt reads as `--cat` prints it, the
# daemon exits 0 and nothing stays mounted.
#
# Usage: test-mount-user.sh [XPLANEFS]   (env: XPF_BUILD, XPF_SOURCE;
#   XPF_MOUNT_USER: the user to run as when started by root, default nobody)
#
# Started by root, the checks run as XPF_MOUNT_USER (setpriv).  Where
# /dev/fuse is not open to that user (mode 0600 on some machines), they run
# in a private mount namespace (unshare -m) where a copy of the device node
# open to all is bound over /dev/fuse: the machine's node is left as it is,
# and whatever is mounted there ends with the namespace.  Started by another
# user, the checks run as that user.  Exit 77 (skip) where none of this is
# possible: no /dev/fuse, no setuid fusermount3, no setpriv or unshare, or an
# xplanefs built without FUSE.  Nothing can hang: every command that touches
# a mount runs under `timeout`, daemons are waited for with a deadline, and
# EXIT traps unmount and kill whatever is left.
set -u

T=60                    # seconds any single check may take
skip() { echo "SKIP: $*"; exit 77; }
. "$(dirname "$0")/lib.sh" # to, alive, xpf_wait_mounted, xpf_mount_cleanup

# ---- the checks, run as the unprivileged user ------------------------------
# test-mount-user.sh --as-user XPLANEFS CAPTURE DIR: mount points under DIR
# (the user's own).
if [ "${1:-}" = --as-user ]; then
	XPF=$2 CAP=$3 DIR=$4
	uid=$(id -u)
	fails=0
	fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
	ok() { echo "ok: $*"; }
	trap xpf_mount_cleanup EXIT
	trap 'exit 1' INT TERM
	caps=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
	[ "$uid" -ne 0 ] && [ "$((16#${caps:-0}))" -eq 0 ] ||
		{ echo "FAIL: --as-user runs as uid $uid with capabilities $caps"; exit 1; }
	echo "ok: running as uid $uid, no capabilities"

	if "$XPF" -f "$CAP" "$DIR/none" 2>&1 | grep -q "built without FUSE"; then
		skip "this xplanefs was built without FUSE"
	fi
	if ! to "$XPF" --cat diagnosis.txt "$CAP" >"$DIR/diagnosis.want" 2>"$DIR/cat.err"; then
		echo "FAIL: --cat diagnosis.txt: $(head -c 300 "$DIR/cat.err")"
		exit 1
	fi
	for how in fusermount3 dash-u TERM; do
		mp=$DIR/mnt-$how log=$DIR/$how.log
		mkdir -p "$mp"
		mounts+=("$mp")
		"$XPF" -f "$CAP" "$mp" >"$log" 2>&1 &
		daemon=$!
		pids+=("$daemon")
		if ! xpf_wait_mounted "$mp" "$daemon"; then
			fail "$how: not mounted as uid $uid: $(head -c 400 "$log")"
			continue
		fi
		opts=$(findmnt -n -o OPTIONS --target "$mp")
		case ",$opts," in
		*,user_id=$uid,*) ;;
		*) fail "$how: the mount is not uid $uid's: $opts" ;;
		esac
		if to cat "$mp/diagnosis.txt" >"$DIR/diagnosis.got" 2>"$DIR/read.err" &&
			cmp -s "$DIR/diagnosis.want" "$DIR/diagnosis.got"; then
			ok "$how: mounted by uid $uid through fusermount3; diagnosis.txt equals --cat"
		else
			fail "$how: diagnosis.txt differs from --cat: $(head -c 200 "$DIR/read.err")"
		fi
		case $how in
		fusermount3) to fusermount3 -u "$mp" || fail "fusermount3 -u $mp" ;;
		dash-u) to "$XPF" -u "$mp" || fail "xplanefs -u $mp" ;;
		TERM) kill -TERM "$daemon" ;;
		esac
		for ((i = 0; i < T * 10; i++)); do
			alive "$daemon" || break
			sleep 0.1
		done
		if alive "$daemon"; then
			fail "$how: daemon still running after ${T}s"
			kill -KILL "$daemon" 2>/dev/null
		fi
		wait "$daemon"
		rc=$?
		if [ "$rc" -ne 0 ]; then
			fail "$how: daemon exited $rc, want 0: $(head -c 300 "$log")"
		elif mountpoint -q "$mp" || grep -qF " $mp " /proc/self/mounts; then
			fail "$how: $mp still mounted after the daemon exited"
		else
			ok "$how: daemon exited 0, nothing left mounted"
		fi
	done
	[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
	exit 0
fi

# ---- setting up: the binary, a capture, the user, /dev/fuse ----------------

XPF=${1:-${XPF_BUILD:-}/src/fs/xplanefs}
CAP_SRC=${XPF_SOURCE:-.}/tests/bad/cases/ok-base.xplane.pb
[ -x "$XPF" ] || skip "no xplanefs binary at '$XPF' (set XPF_BUILD)"
[ -f "$CAP_SRC" ] || skip "no capture at '$CAP_SRC' (set XPF_SOURCE)"
[ -c /dev/fuse ] || skip "/dev/fuse is missing"
fm=$(command -v fusermount3) || skip "fusermount3 is missing (apt install fuse3)"
[ -u "$fm" ] && [ "$(stat -L -c %u "$fm")" -eq 0 ] || skip "$fm is not setuid root"

# In the private namespace (see the top): bind an open copy of /dev/fuse.
if [ "${XPF_MOUNT_USER_NS:-}" = 1 ]; then
	dev=$XPF_MOUNT_USER_TMP/dev
	mkdir -p "$dev"
	mount -t tmpfs -o mode=755 xpf-dev "$dev" &&
		mknod -m 666 "$dev/fuse" c "$((0x$(stat -c %t /dev/fuse)))" "$((0x$(stat -c %T /dev/fuse)))" &&
		mount --bind "$dev/fuse" /dev/fuse ||
		skip "could not bind an open copy of /dev/fuse in a private mount namespace"
fi

# The copies the user runs and reads, in a folder of their own.
if [ -n "${XPF_MOUNT_USER_TMP:-}" ]; then
	tmp=$XPF_MOUNT_USER_TMP
else
	tmp=$(mktemp -d /tmp/xpf-mount-user.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	mkdir "$tmp/bin" "$tmp/mnt"
	cp "$XPF" "$tmp/bin/xplanefs"
	cp "$0" "$(dirname "$0")/lib.sh" "$tmp/bin/"
	cp "$CAP_SRC" "$tmp/capture.xplane.pb"
	chmod 755 "$tmp" "$tmp/bin" "$tmp/bin/xplanefs" "$tmp/bin/test-mount-user.sh"
	chmod 644 "$tmp/capture.xplane.pb"
fi
cd "$tmp" || exit 1
# (the script, too, runs from the copy: the user may not reach the source)
me=$tmp/bin/test-mount-user.sh
args=(--as-user "$tmp/bin/xplanefs" "$tmp/capture.xplane.pb" "$tmp/mnt")

if [ "$(id -u)" -ne 0 ]; then
	[ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse is not open to $(id -un)"
	"$me" "${args[@]}"
	exit
fi

user=${XPF_MOUNT_USER:-nobody}
uid=$(id -u "$user" 2>/dev/null) || skip "no user '$user' (set XPF_MOUNT_USER)"
gid=$(id -g "$user")
[ "$uid" -ne 0 ] || skip "XPF_MOUNT_USER '$user' is root"
command -v setpriv >/dev/null || skip "setpriv is missing (util-linux)"
as_user=(setpriv --reuid="$uid" --regid="$gid" --clear-groups)
chown "$uid:$gid" "$tmp/mnt"
"${as_user[@]}" test -x "$tmp/bin/xplanefs" -a -r "$tmp/capture.xplane.pb" ||
	skip "$user cannot reach $tmp"

if "${as_user[@]}" test -r /dev/fuse -a -w /dev/fuse; then
	"${as_user[@]}" "$me" "${args[@]}"
	rc=$?
elif [ "${XPF_MOUNT_USER_NS:-}" = 1 ]; then
	skip "/dev/fuse is still not open to $user in the private namespace"
elif command -v unshare >/dev/null && unshare -m --propagation private true 2>/dev/null; then
	echo "note: /dev/fuse is not open to $user: in a private mount namespace with an open copy"
	XPF_MOUNT_USER_NS=1 XPF_MOUNT_USER_TMP=$tmp unshare -m --propagation private "$me" "$XPF"
	rc=$?
else
	skip "/dev/fuse is not open to $user, and no private mount namespace (unshare -m)"
fi

# Whatever the user's run left: nothing mounted, no daemon.  (In the
# namespace this runs there too, before the namespace ends.)
if grep -qF "$tmp/mnt/" /proc/self/mounts; then
	echo "FAIL: left mounted: $(grep -F "$tmp/mnt/" /proc/self/mounts)"
	grep -F "$tmp/mnt/" /proc/self/mounts | while read -r _ m _; do umount -l "$m"; done
	rc=1
fi
left=$(pgrep -f "^$tmp/bin/xplanefs " || true)
if [ -n "$left" ]; then
	echo "FAIL: daemons left running: $left"
	kill -KILL $left
	rc=1
fi
exit "$rc"
