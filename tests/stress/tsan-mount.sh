#!/usr/bin/env bash
# The mount under ThreadSanitizer (issue 23): a TSan-built xplanefs serves a
# fresh mount with its multi-threaded FUSE loop (and XPF_THREADS=3 scans)
# while several readers go over the whole tree at once (cat of every file,
# sha256sum, ls -lR, find with sizes); three rounds, each on a fresh mount
# ended another way (fusermount3 -u, SIGTERM, xplanefs -u).  Every reader
# gets the bytes of --export, each unmount is clean (the daemon exits 0,
# nothing is left mounted), and no TSan report appears.
#   tests/stress/tsan-mount.sh XPLANEFS CAPTURE...    (called by tsan.sh)
# Exit 77 where no mount can be tried: no /dev/fuse, no fusermount3, or an
# xplanefs built without FUSE.  Nothing can hang or stay mounted: every
# command that touches a mount runs under `timeout`, daemons are waited for
# with a deadline, and the EXIT trap unmounts and kills whatever is left.
set -u

XPF=$1
shift
READERS=8               # concurrent readers per round
ROUNDS=3
T=300                   # seconds for any one step (TSan is slow)

skip() { echo "tsan-mount: SKIP: $*"; exit 77; }
[ -x "$XPF" ] || skip "no xplanefs at '$XPF'"
[ -c /dev/fuse ] || skip "/dev/fuse is missing"
command -v fusermount3 >/dev/null || skip "fusermount3 is missing (apt install fuse3)"

# halt_on_error=0: a report must not kill the daemon under its mount (that
# leaves a dead mount); it is found in the log and in the exit status (66).
export TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1
# TSan of this toolchain needs ASLR off on newer kernels (as tsan.sh).
run=()
setarch "$(uname -m)" -R true 2>/dev/null && run=(setarch "$(uname -m)" -R)

tmp=$(mktemp -d /tmp/xpf-tsan-mount.XXXXXX)
. "$(dirname "$0")/../mount/lib.sh"
cleanup() {
	xpf_mount_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fails=0
fail() { echo "tsan-mount: FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "tsan-mount: ok: $*"; }
tsan_reports() { grep -c "WARNING: ThreadSanitizer\|ERROR: ThreadSanitizer" "$@" 2>/dev/null | awk -F: '{ n += $NF } END { print n + 0 }'; }

if "${run[@]}" "$XPF" -u "$tmp" 2>&1 | grep -q "built without FUSE"; then
	skip "this xplanefs was built without FUSE"
fi

# Reader K: kind K % 4, so that kinds of request mix in a round; the files
# in an order of its own (shuf, seeded by K and the round), so that readers
# ask for different files at once rather than queue behind one another.
reader() { # MOUNT K ROUND OUT
	local m=$1 k=$2 r=$3 out=$4
	shuf --random-source=<(yes "$k.$r") "$tmp/files" >"$out.order"
	case $((k % 4)) in
	0) (cd "$m" && to xargs -r -d '\n' sha256sum -- <"$out.order") | LC_ALL=C sort -k2 >"$out" ;;
	1) (cd "$m" && to xargs -r -d '\n' cat -- <"$out.order") >/dev/null ;;
	2) to ls -lRa "$m" >/dev/null ;;
	3) to find "$m" -printf '%y %s %p\n' >/dev/null ;;
	esac
}

n=0
for cap in "$@"; do
	n=$((n + 1))
	if [ ! -e "$cap" ]; then
		echo "tsan-mount: skipping $cap: absent"
		continue
	fi
	d=$tmp/$n
	mkdir -p "$d"
	echo "tsan-mount: $cap"
	XPF_THREADS=3 to "${run[@]}" "$XPF" --export "$d/exp" "$cap" >"$d/export.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$cap: --export exited $rc: $(head -c 300 "$d/export.log")"
		continue
	fi
	(cd "$d/exp" && find . -type f | LC_ALL=C sort) >"$tmp/files"
	(cd "$d/exp" && xargs -r -d '\n' sha256sum -- <"$tmp/files") | LC_ALL=C sort -k2 >"$d/sha.exp"

	# Each round on a fresh mount: the kernel keeps what it was given
	# (infinite timeouts, keep_cache), so the daemon's threads race in the
	# first reading of each entry; a second pass on one mount would barely
	# reach them.
	bad=0 maxt=0 logs=()
	for ((r = 1; r <= ROUNDS; r++)); do
		m=$d/m$r log=$d/daemon.$r.log
		mkdir -p "$m"
		mounts+=("$m")
		logs+=("$log")
		# rounds after the first: a 1 MiB cache of rendered files, so that
		# files are dropped and made again under the readers (0: no limit)
		XPF_CACHE_MB=$((r > 1 ? 1 : 0)) XPF_THREADS=3 "${run[@]}" "$XPF" -f "$cap" "$m" >"$log" 2>&1 &
		daemon=$!
		pids+=("$daemon")
		if ! xpf_wait_mounted "$m" "$daemon"; then
			fail "$cap: round $r: not mounted: $(head -c 300 "$log")"
			continue
		fi
		rs=()
		for ((k = 0; k < READERS; k++)); do
			reader "$m" "$k" "$r" "$d/sha.$r.$k" &
			rs+=($!)
		done
		for k in "${!rs[@]}"; do
			wait "${rs[$k]}" || { bad=$((bad + 1)); echo "  round $r reader $k (kind $((k % 4))) failed"; }
		done
		nt=$(ls "/proc/$daemon/task" 2>/dev/null | wc -l)
		[ "$nt" -gt "$maxt" ] && maxt=$nt
		for ((k = 0; k < READERS; k += 4)); do
			cmp -s "$d/sha.exp" "$d/sha.$r.$k" ||
				{ bad=$((bad + 1)); echo "  round $r reader $k: bytes differ from --export"; }
		done

		# A clean unmount, by each way in turn.
		case $((r % 3)) in
		1) how="fusermount3 -u"; to fusermount3 -u "$m" || fail "$cap: fusermount3 -u" ;;
		2) how=SIGTERM; kill -TERM "$daemon" ;;
		0) how="xplanefs -u"; to "${run[@]}" "$XPF" -u "$m" 2>>"$log" || fail "$cap: xplanefs -u" ;;
		esac
		for ((i = 0; i < T * 10; i++)); do
			alive "$daemon" || break
			sleep 0.1
		done
		if alive "$daemon"; then
			fail "$cap: round $r: daemon still running ${T}s after $how"
			kill -KILL "$daemon"
		fi
		wait "$daemon"
		rc=$?
		if [ "$rc" -ne 0 ]; then
			fail "$cap: round $r: daemon exited $rc after $how, want 0 (66: TSan reports)"
		elif mountpoint -q "$m"; then
			fail "$cap: round $r: still mounted after the daemon exited"
		else
			ok "$cap: round $r: $READERS concurrent readers, $how: daemon exited 0, nothing left mounted"
		fi
	done
	[ "$bad" -eq 0 ] && ok "$cap: every reader of $(wc -l <"$tmp/files") files got the bytes of --export (daemon: up to $maxt threads)" ||
		fail "$cap: $bad reader(s) failed"
	nr=$(tsan_reports "$d/export.log" "${logs[@]}")
	if [ "$nr" -ne 0 ]; then
		fail "$cap: $nr ThreadSanitizer report(s):"
		grep -h -A30 -m2 "WARNING: ThreadSanitizer\|ERROR: ThreadSanitizer" "$d/export.log" "${logs[@]}" | head -80
	else
		ok "$cap: no ThreadSanitizer report"
	fi
done

[ "$fails" -eq 0 ] || { echo "tsan-mount: $fails check(s) failed"; exit 1; }
echo "tsan-mount: all checks passed"
