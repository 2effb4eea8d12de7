#!/usr/bin/env bash
# The command line: exit codes (README "Exit status") and one-line errors.
set -u
XPF=$1
S=${XPF_SHARED:-../shared}/captures
tmp=$(mktemp -d)
here=$(cd "$(dirname "$0")/.." && pwd)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect CODE FIRST-LINE-SUBSTRING -- ARGS...
expect() {
	local code=$1 needle=$2
	shift 3
	"$XPF" "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ "$rc" -ne "$code" ]; then
		echo "FAIL: xplanefs $*: exit $rc, want $code; stderr: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
		return
	fi
	if [ -n "$needle" ] && ! grep -qF -- "$needle" "$tmp/err" "$tmp/out"; then
		echo "FAIL: xplanefs $*: output lacks '$needle': $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
		return
	fi
	if [ "$code" -ne 0 ] && [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		echo "FAIL: xplanefs $*: error is not one line: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
	fi
	echo "ok: xplanefs $* -> $rc"
}

expect 0 "Exit status" -- --help
expect 0 "xplanefs " -- --version
expect 1 "unknown option" -- --no-such-option
expect 1 "missing CAPTURE" --
expect 1 "option '--cat' needs an argument" -- --cat
expect 1 "option '--export' needs an argument" -- x.xplane.pb --export
expect 1 "option '-o' needs an argument" -- x.xplane.pb -o
expect 1 "--capacity wants a number of bytes" -- --capacity ' -5' --cat diagnosis.txt x.xplane.pb
mkfifo "$tmp/fifo.xplane.pb"
expect 2 "not a regular file" -- --check "$tmp/fifo.xplane.pb"
expect 2 "cannot open" -- --check "$tmp/absent.xplane.pb"
: >"$tmp/x.xplane.riegeli"
expect 4 "not supported" -- --check "$tmp/x.xplane.riegeli"
: >"$tmp/empty.xplane.pb"
expect 3 "empty file" -- --check "$tmp/empty.xplane.pb"
head -c 4096 /dev/urandom >"$tmp/random.xplane.pb"
expect 3 "" -- --check "$tmp/random.xplane.pb"
# --export never writes into the capture's folder itself, onto the capture,
# nor inside a run directory given as CAPTURE; a new folder beside the
# capture is the user's choice (README: `--export report/ capture.xplane.pb`)
mkdir "$tmp/capdir"
cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/capdir/c.xplane.pb"
expect 1 "capdir: the capture's own folder, which xplanefs never writes to" -- --export "$tmp/capdir" "$tmp/capdir/c.xplane.pb"
expect 1 "capdir/: the capture's own folder" -- --export "$tmp/capdir/" "$tmp/capdir/c.xplane.pb"
expect 1 "c.xplane.pb: the capture itself, which xplanefs never writes to" -- --export "$tmp/capdir/c.xplane.pb" "$tmp/capdir/c.xplane.pb"
expect 1 "capdir/new: inside the folder given as CAPTURE" -- --export "$tmp/capdir/new" "$tmp/capdir"
expect 1 "capdir/new: inside the folder given as CAPTURE" -- --export "$tmp/capdir/new" "$tmp/capdir/"
(cd "$tmp/capdir" && "$XPF" --export report/ c.xplane.pb >"$tmp/out" 2>"$tmp/err")
rc=$?
if [ "$rc" -eq 0 ] && [ -s "$tmp/capdir/report/diagnosis.txt" ] && [ ! -s "$tmp/err" ] &&
	cmp -s "$tmp/capdir/c.xplane.pb" "$here/bad/cases/ok-base.xplane.pb"; then
	echo "ok: --export report/ beside the capture"
else
	echo "FAIL: --export report/ beside the capture: exit $rc: $(head -c 300 "$tmp/err")"
	fails=$((fails + 1))
fi
rm -rf "$tmp/capdir/report"
# nor does the mount put its default mount point there (SPEC §2: exit 1)
(cd "$tmp/capdir" && "$XPF" c.xplane.pb >"$tmp/out" 2>"$tmp/err")
rc=$?
if grep -q "built without FUSE" "$tmp/err"; then
	echo "skipping the default mount point case: built without FUSE"
elif [ "$rc" -eq 1 ] && grep -q "the current directory holds the capture, and xplanefs never writes there: give a MOUNTPOINT" "$tmp/err" &&
	[ "$(ls "$tmp/capdir")" = c.xplane.pb ]; then
	echo "ok: no default mount point in the capture's folder"
else
	echo "FAIL: default mount point in the capture's folder: exit $rc: $(head -c 300 "$tmp/err"); $(ls "$tmp/capdir")"
	fails=$((fails + 1))
fi
# nor a mount point that is the capture's folder (it would hide it), nor a
# default one named ".." or "." ("...xplane.pb", "..xplane.pb")
mkdir -p "$tmp/dots/here"
cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/dots/...xplane.pb"
cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/dots/..xplane.pb"
if "$XPF" -f "$tmp/capdir/c.xplane.pb" "$tmp/capdir" 2>&1 | grep -q "built without FUSE"; then
	echo "skipping the mount point cases: built without FUSE"
else
	expect 1 "capdir: the capture's own folder: a mount there would hide it; give another MOUNTPOINT" -- -f "$tmp/capdir/c.xplane.pb" "$tmp/capdir"
	# nor the baseline's folder (issue 38: it was mounted over)
	mkdir -p "$tmp/after"
	cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/after/a.xplane.pb"
	timeout 20 "$XPF" -f --base "$tmp/capdir/c.xplane.pb" "$tmp/after/a.xplane.pb" "$tmp/capdir" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -eq 1 ] && grep -qxF "xplanefs: $tmp/capdir: the baseline's own folder: a mount there would hide it; give another MOUNTPOINT" "$tmp/err"; then
		echo "ok: no mount over the baseline's folder"
	else
		echo "FAIL: a mount over the baseline's folder: exit $rc: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
	fi
	# nor a folder above either's (issue 38): the mount hides what is below
	mkdir -p "$tmp/up/bdir/sub"
	cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/up/bdir/sub/b.xplane.pb"
	for c in "$tmp/up|$tmp/up/bdir/sub/b.xplane.pb|capture" "$tmp/up/bdir|$tmp/after/a.xplane.pb --base $tmp/up/bdir/sub/b.xplane.pb|baseline"; do
		IFS='|' read -r mp args who <<<"$c"
		# shellcheck disable=SC2086 # args: the words of CAPTURE or --base BASE CAPTURE
		timeout 20 "$XPF" -f $args "$mp" 2>"$tmp/err"
		rc=$?
		if [ "$rc" -eq 1 ] && grep -qxF "xplanefs: $mp: holds the $who's folder: a mount there would hide it; give another MOUNTPOINT" "$tmp/err"; then
			echo "ok: no mount above the $who's folder"
		else
			echo "FAIL: a mount above the $who's folder: exit $rc: $(head -c 300 "$tmp/err")"
			fails=$((fails + 1))
		fi
	done
	for c in ...xplane.pb ..xplane.pb; do
		(cd "$tmp/dots/here" && timeout 20 "$XPF" -f "../$c" >"$tmp/out" 2>"$tmp/err")
		rc=$?
		if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
			grep -qF "xplanefs: $c: its name gives no mount point" "$tmp/err" &&
			[ -z "$(ls "$tmp/dots/here")" ] && ! grep -q " $tmp/dots" /proc/mounts; then
			echo "ok: no default mount point from $c"
		else
			echo "FAIL: default mount point from $c: exit $rc: $(head -c 300 "$tmp/err")"
			fails=$((fails + 1))
		fi
	done
fi
# a folder of the user's own below it is theirs
mkdir "$tmp/capdir/mine"
expect 0 "" -- --export "$tmp/capdir/mine/out" "$tmp/capdir/c.xplane.pb"
rm -rf "$tmp/capdir/mine"
[ "$(ls "$tmp/capdir")" = c.xplane.pb ] || { echo "FAIL: the capture's folder changed: $(ls "$tmp/capdir")"; fails=$((fails + 1)); }
: >"$tmp/afile"
expect 1 "afile: not a directory" -- --export "$tmp/afile" "$tmp/capdir/c.xplane.pb"

# Links already inside DIR are never followed (issue 38): a file's link is
# replaced, not written through; a folder's link is refused; a hard link to
# the capture is a name replaced, the capture keeps its bytes; a folder of
# DIR that holds a capture is never written in, however it was reached.
ok_cap() { cmp -s "$tmp/capdir/c.xplane.pb" "$here/bad/cases/ok-base.xplane.pb"; }
mkdir "$tmp/lnk"
ln -s ../capdir/c.xplane.pb "$tmp/lnk/summary.txt"
ln "$tmp/capdir/c.xplane.pb" "$tmp/lnk/README" 2>/dev/null || cp "$tmp/capdir/c.xplane.pb" "$tmp/lnk/README"
expect 0 "" -- --export "$tmp/lnk" "$tmp/capdir/c.xplane.pb"
if ok_cap && [ -f "$tmp/lnk/summary.txt" ] && [ ! -L "$tmp/lnk/summary.txt" ] &&
	grep -q "^xplanefs: a read-only report" "$tmp/lnk/README" && [ "$(readlink "$tmp/lnk/focus")" = "modules/jit_f(1)" ]; then
	echo "ok: --export replaced summary.txt -> the capture and a hard link, not the capture"
else
	echo "FAIL: --export over links: the capture changed, or $(ls -l "$tmp/lnk" | head -c 300)"
	fails=$((fails + 1))
fi
expect 0 "" -- --export "$tmp/lnk" "$tmp/capdir/c.xplane.pb"
rm -rf "$tmp/lnk/modules"
ln -s ../capdir "$tmp/lnk/modules"
expect 6 "lnk/modules: is there and is not a folder (a symbolic link is never followed)" -- --export "$tmp/lnk" "$tmp/capdir/c.xplane.pb"
[ "$(ls "$tmp/capdir")" = c.xplane.pb ] && ok_cap && echo "ok: modules -> the capture's folder not written in" ||
	{ echo "FAIL: modules -> the capture's folder: $(ls "$tmp/capdir")"; fails=$((fails + 1)); }
rm "$tmp/lnk/modules"
ln -s .. "$tmp/lnk/modules"
expect 6 "is not a folder" -- --export "$tmp/lnk" "$tmp/capdir/c.xplane.pb"
[ ! -e "$tmp/index.tsv" ] && [ ! -e "$tmp/modules" ] || { echo "FAIL: modules -> .. written through"; fails=$((fails + 1)); }
rm "$tmp/lnk/modules"
# a run directory reached from inside DIR as a real folder (hosts/ of a
# report the user moved the captures into): never written in
mkdir -p "$tmp/nest/hosts/c"
cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/nest/hosts/c/modules"
mkdir "$tmp/run2"
cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/run2/c.xplane.pb"
cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/run2/d.xplane.pb"
mkdir "$tmp/nest2"
mv "$tmp/run2" "$tmp/nest2/hosts"
expect 1 "nest2/hosts: a folder that holds a capture, which xplanefs never writes in" -- --export "$tmp/nest2" "$tmp/nest2/hosts"
[ "$(ls "$tmp/nest2/hosts" | tr '\n' ' ')" = "c.xplane.pb d.xplane.pb " ] &&
	echo "ok: a run directory inside DIR is not written in" ||
	{ echo "FAIL: the run directory inside DIR: $(ls "$tmp/nest2/hosts")"; fails=$((fails + 1)); }
expect 6 "nest/hosts/c/modules: is there and is not a folder" -- --export "$tmp/nest" "$tmp/nest2/hosts"
cmp -s "$tmp/nest/hosts/c/modules" "$here/bad/cases/ok-base.xplane.pb" ||
	{ echo "FAIL: a file where the tree has a folder was changed"; fails=$((fails + 1)); }

# --base LOGDIR LOGDIR compares the last two runs, not the newest with itself
# (issue 38); --base-run picks the baseline's run; a run of what is not a
# logdir is a usage error, not ignored.
L=$tmp/runs
mkdir -p "$L/plugins/profile/2026_01_01_00_00_00" "$L/plugins/profile/2026_02_01_00_00_00" "$tmp/one/plugins/profile/2026_01_01_00_00_00"
cp "$here/bad/cases/ok-base.xplane.pb" "$L/plugins/profile/2026_01_01_00_00_00/a.xplane.pb"
cp "$here/bad/cases/name-dots.xplane.pb" "$L/plugins/profile/2026_02_01_00_00_00/a.xplane.pb"
cp "$here/bad/cases/ok-base.xplane.pb" "$tmp/one/plugins/profile/2026_01_01_00_00_00/a.xplane.pb"
expect 0 "[read] modules-gone: 1 module gone (only in the baseline): jit_f(1)" -- --base "$L" --cat compare/diagnosis.txt "$L"
expect 0 "[read] nothing-changed" -- --base "$L" --base-run 2026_02_01_00_00_00 --cat compare/diagnosis.txt "$L"
expect 0 "[read] nothing-changed" -- --base "$L" --run 2026_01_01_00_00_00 --base-run 2026_01_01_00_00_00 --cat compare/diagnosis.txt "$L"
expect 0 "[read] modules-new: 4 modules new" -- --base "$L/" --cat compare/diagnosis.txt "$L"
expect 1 "no run older than '2026_01_01_00_00_00' in plugins/profile to compare it with: give --base-run NAME" -- --base "$L" --run 2026_01_01_00_00_00 --cat compare/diagnosis.txt "$L"
expect 1 "no run older than '2026_01_01_00_00_00'" -- --base "$tmp/one" --cat compare/diagnosis.txt "$tmp/one"
expect 0 "[read] nothing-changed" -- --base "$tmp/one" --cat compare/diagnosis.txt "$L/plugins/profile/2026_01_01_00_00_00"
expect 1 "no run 'nope' in plugins/profile" -- --base "$L" --base-run nope --cat compare/diagnosis.txt "$L"
expect 1 "c.xplane.pb: not a logdir (no plugins/profile/): its runs cannot be chosen" -- --run 2026_01_01_00_00_00 --cat diagnosis.txt "$tmp/capdir/c.xplane.pb"
expect 1 "c.xplane.pb: not a logdir" -- --base "$tmp/capdir/c.xplane.pb" --base-run x --cat compare/diagnosis.txt "$L"
expect 1 "--base-run goes with --base" -- --base-run x --cat diagnosis.txt "$L"

# gzip'd captures (SPEC §2): read as the file they decompress to, told by
# their first bytes; the report names them without .gz, so the tree is
# the plain file's byte for byte
mk=${XPF_BUILD:-}/tests/mkcapture/xplane-mkcapture
if [ -x "$mk" ]; then
	G=$tmp/gz
	mkdir -p "$G/run"
	# today's captures' /host:__ScopeRangeCallStack__ plane: no dangling id
	"$mk" attention-too-big --variant scope-tree "$G/s.xplane.pb.gz" >/dev/null
	zcat "$G/s.xplane.pb.gz" >"$G/s.xplane.pb"
	expect 0 "ok" -- --check "$G/s.xplane.pb.gz"
	expect 0 "ok" -- --check "$G/s.xplane.pb"
	expect 0 "decoder: every plane, event, stat and module decodes" -- --cat capture/errors.txt "$G/s.xplane.pb.gz"
	expect 0 "/host:__ScopeRangeCallStack__" -- --cat capture/planes.tsv "$G/s.xplane.pb.gz"
	expect 0 "# s.xplane.pb: focus jit_step(2811)" -- --cat diagnosis.txt "$G/s.xplane.pb.gz"
	expect 0 "" -- --export "$G/x-gz" "$G/s.xplane.pb.gz"
	expect 0 "" -- --export "$G/x-plain" "$G/s.xplane.pb"
	diff -r "$G/x-gz" "$G/x-plain" >/dev/null ||
		{ echo "FAIL: the .gz's tree differs from the plain file's"; fails=$((fails + 1)); }
	cp "$G/s.xplane.pb.gz" "$G/renamed.xplane.pb"
	expect 0 "ok" -- --check "$G/renamed.xplane.pb"
	cp "$G/s.xplane.pb.gz" "$G/run/h1.xplane.pb.gz"
	cp "$G/s.xplane.pb" "$G/run/h2.xplane.pb"
	cp "$G/s.xplane.pb.gz" "$G/run/h2.xplane.pb.gz" # (kept both ways: one host)
	expect 0 "run: 2 host(s)" -- --check "$G/run"
	expect 0 "h1	jit_step(2811)" -- --cat hosts.tsv "$G/run"
	head -c 1000 "$G/s.xplane.pb.gz" >"$G/cut.xplane.pb.gz"
	expect 3 "cut.xplane.pb.gz: not a capture: gzip stream truncated at compressed byte 1000" -- --check "$G/cut.xplane.pb.gz"
	expect 3 "cut.xplane.pb.gz: not a capture: gzip stream truncated" -- --cat diagnosis.txt "$G/cut.xplane.pb.gz"
	head -c 3000 /dev/urandom | gzip >"$G/noise.xplane.pb.gz"
	expect 3 "noise.xplane.pb: " -- --check "$G/noise.xplane.pb.gz"
	gzip -c "$here/bad/cases/ok-hlo.hlo.pb" >"$G/m.hlo.pb.gz"
	expect 0 "jit_f(1): program_id 1" -- --check "$G/m.hlo.pb.gz"
else
	echo "skipping the gzip'd scenario captures: no xplane-mkcapture in \$XPF_BUILD"
fi

# files that are not captures say what they look like
printf '\037\213\010\000xxxx' >"$tmp/h.trace.json.gz"
expect 3 "not a capture: a gzip file (*.trace.json.gz is the trace viewer's copy" -- --check "$tmp/h.trace.json.gz"
echo '{"traceEvents": []}' >"$tmp/t.json"
expect 3 "not a capture: JSON text" -- --check "$tmp/t.json"
mkdir "$tmp/emptydir"
expect 3 "no *.xplane.pb" -- --check "$tmp/emptydir"
chmod 000 "$tmp/empty.xplane.pb"
if [ "$(id -u)" -ne 0 ]; then
	expect 2 "Permission denied" -- --check "$tmp/empty.xplane.pb"
fi

if [ -d "$S" ]; then
	expect 3 "not a capture" -- --check "$S/bad/op-stats-not-xspace.pb"
	expect 3 "past end of file" -- --check "$S/bad/utf8-mangled.xplane.pb"
	expect 3 "not a capture" -- --cat diagnosis.txt "$S/bad/op-stats-not-xspace.pb"
	expect 0 "GPU_0_bfc: 69 allocations, 69 deallocations, max peak_bytes_in_use 738197504" -- --check "$S/mi300x-jax08-gemm.xplane.pb"
	expect 0 "jit_matmul(59): program_id 59, buffer assignment yes: 7 allocations, 7 logical buffers, 201326604 bytes" -- --check "$S/mi300x-jax08-attention.xplane.pb"
	expect 0 "allocator GPU_6_bfc: 761 allocations, 208 deallocations, max peak_bytes_in_use 6210111488" -- --check "$S/tf-v100-multiworker.xplane.pb"
	expect 0 "tpu:0 (keyed by index_on_host): 117 allocations" -- --check "$S/tpu-v6e-inference.xplane.pb"
	expect 0 "jit_forward_3d_conv(15): program_id 15, buffer assignment yes: 4 allocations, 8 logical buffers, 1158144128 bytes" -- --check "$S/mi300x-conv-run"
	expect 0 "jit_train_step(16)" -- --check "$S/hlo/h100-maxtext-jit_train_step.hlo.pb"
	cp "$S/hlo/h100-maxtext-jit_train_step.hlo.pb" "$tmp/plain.pb"
	expect 3 "(first plane 'main.2076_spmd'; an HloProto? xplanefs reads one named *.hlo.pb or *.hlo_proto.pb)" -- --check "$tmp/plain.pb"
	# A logdir: plugins/profile/<run>/, newest run unless --run.
	mkdir -p "$tmp/logdir/plugins/profile/2026_01_01_00_00_00" "$tmp/logdir/plugins/profile/2026_02_01_00_00_00"
	ln -s "$S/mi300x-jax08-gemm.xplane.pb" "$tmp/logdir/plugins/profile/2026_01_01_00_00_00/a.xplane.pb"
	ln -s "$S/mi300x-jax08-attention.xplane.pb" "$tmp/logdir/plugins/profile/2026_02_01_00_00_00/b.xplane.pb"
	expect 0 "run 2026_02_01_00_00_00" -- --check "$tmp/logdir"
	expect 0 "host a:" -- --check --run 2026_01_01_00_00_00 "$tmp/logdir"
	expect 1 "no run 'nope' in plugins/profile (newest first: 2026_02_01_00_00_00, 2026_01_01_00_00_00)" -- --check --run nope "$tmp/logdir"
	expect 3 "(a logdir's plugins/profile: give the logdir, two levels up, or one run's folder)" -- --check "$tmp/logdir/plugins/profile"
	expect 1 "is a directory (9 entries; try README)" -- --cat / "$S/mi300x-jax08-gemm.xplane.pb"
	expect 1 "no such file" -- --cat no/such/file "$S/mi300x-jax08-gemm.xplane.pb"
	expect 0 "/host:CPU" -- --cat capture/planes.tsv "$S/mi300x-jax08-gemm.xplane.pb"
	# --module without the program id, when one module alone has the name
	g="$S/mi300x-jax08-gemm.xplane.pb"
	expect 0 "focus jit_convert_element_type(1) (chosen with --module)" -- --module jit_convert_element_type --cat diagnosis.txt "$g"
	expect 0 "focus jit_dot(49) (--module matched several modules (give the full name: modules/index.tsv); the biggest" -- --module jit_dot --cat diagnosis.txt "$g"
	expect 0 "(--module matched no module (modules/index.tsv lists them); the biggest" -- --module nosuch --cat diagnosis.txt "$g"
	expect 0 "from allocator GPU_0_bfc (in use + available); --device 99 has no pool allocator in the capture" -- --device 99 --cat diagnosis.txt "$g"
	expect 0 "; --capacity is read only without allocator events" -- --capacity 1000 --cat diagnosis.txt "$g"
	# --top N: N modules in summary.txt, the rest counted (gemm has 16)
	expect 0 "  ... 15 more in modules/index.tsv" -- --top 1 --cat summary.txt "$g"
	expect 0 "  ... 13 more in modules/index.tsv" -- --top 3 --cat summary.txt "$g"
	# --export writes the tree; the capture's folder is untouched.
	before=$(ls -la "$S" | md5sum)
	expect 0 "" -- --export "$tmp/export" "$S/mi300x-jax08-gemm.xplane.pb"
	[ -f "$tmp/export/capture/planes.tsv" ] || { echo "FAIL: export lacks capture/planes.tsv"; fails=$((fails + 1)); }
	[ "$before" = "$(ls -la "$S" | md5sum)" ] || { echo "FAIL: the captures folder changed"; fails=$((fails + 1)); }
else
	echo "skipping the real-capture cases: $S is absent"
fi

# A run directory of more hosts than the usual soft limit of descriptors:
# every capture keeps its file open, so xplanefs takes the hard limit.
if [ "$(ulimit -H -n)" = unlimited ] || [ "$(ulimit -H -n)" -gt 1300 ]; then
	mkdir "$tmp/many"
	for i in $(seq 1 1100); do
		ln -s "$here/bad/cases/ok-base.xplane.pb" "$tmp/many/h$i.xplane.pb"
	done
	# a subshell for the limit: its failure count comes back as its status
	(
		f0=$fails
		ulimit -S -n 1024 && expect 0 "h1100: {fits}" -- --cat diagnosis.txt "$tmp/many"
		[ "$fails" = "$f0" ]
	) || fails=$((fails + 1))
else
	echo "skipping the 1100-host case: the hard limit of descriptors is $(ulimit -H -n)"
fi

# Module directory names made safe (SPEC §3) and TSV fields escaped (§4):
# modules/index.tsv's dir and name columns
names() { "$XPF" --cat modules/index.tsv "$here/bad/cases/$1.xplane.pb" | cut -f1,2 | tail -n +2; }
want_names() {
	local got
	got=$(names "$1")
	if [ "$got" = "$2" ]; then
		echo "ok: $1 module directories"
	else
		echo "FAIL: $1 module directories: got $(printf %q "$got"), want $(printf %q "$2")"
		fails=$((fails + 1))
	fi
}
want_names name-collide $'jit_f\tjit_f\njit_f (2)\tjit_f\njit_f (2) (2)\tjit_f (2)\njit_f (3)\tjit_f'
want_names name-slash $'jit_.._.._etc_passwd(1)\tjit/../../etc/passwd(1)\n_(2)\t/(2)'
want_names name-dots $'_dot_\t.\n_dotdot_\t..\n_empty_\t\n_dot_ (2)\t_dot_'
# (a tab, a newline, a backslash and a \001: the directory has '_' for the
# control characters; TSV escapes all four, \001 as \x01)
want_names name-ctrl $'a_b_c\\\\d_(1)\ta\\tb\\nc\\\\d\\x01(1)'
# cut to at most 255 bytes, on a UTF-8 boundary
long=$(names name-utf8-300 | cut -f1)
if [ -z "$long" ] || echo "$long" | LC_ALL=C awk 'length($0) > 255 { bad = 1 } END { exit !bad }' ||
	! echo "$long" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1; then
	echo "FAIL: name-utf8-300: a directory name over 255 bytes or cut inside a character"
	fails=$((fails + 1))
else
	echo "ok: name-utf8-300 directories within 255 bytes, whole characters"
fi

# A module named as the file beside the module directories (SPEC §3)
if "$XPF" --export "$tmp/idx" "$here/bad/cases/name-index-tsv.xplane.pb" 2>"$tmp/err" &&
	[ "$(ls "$tmp/idx/modules" | tr '\n' '|')" = "index.tsv|index.tsv (2)|jit_g(2)|" ] &&
	[ -f "$tmp/idx/modules/index.tsv" ] && [ -f "$tmp/idx/modules/index.tsv (2)/plan.json" ] &&
	[ "$(cut -f1,2 "$tmp/idx/modules/index.tsv" | tail -n +2 | tr '\n' '|')" = $'index.tsv (2)\tindex.tsv|jit_g(2)\tjit_g(2)|' ]; then
	echo "ok: a module named index.tsv"
else
	echo "FAIL: a module named index.tsv: $(head -c 300 "$tmp/err"); $(ls "$tmp/idx/modules" 2>&1 | tr '\n' '|')"
	fails=$((fails + 1))
fi

# Names with control characters (SPEC §3): escaped in error lines, text
# files and TSV, so a name cannot forge a line or colour a terminal
forge="$here/bad/cases/name-ctrl-forge.xplane.pb"
esc='\nxplanefs: all good\x1b[31m'
expect 3 "module 'jit_f${esc}(1)': unsupported wire type" -- --cat summary.txt "$forge"
if grep -qxF "  /device:GPU:0${esc}: name ?, vendor Nvidia, HBM 80.00 GiB (85899345920 bytes) [read]" "$tmp/out" &&
	grep -qxF "  jit_f${esc}(1) (focus): no buffer assignment, 0 executions" "$tmp/out" &&
	! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$tmp/out" &&
	! grep -q '^xplanefs: all good' "$tmp/out"; then
	echo "ok: summary.txt escapes control characters in names"
else
	echo "FAIL: summary.txt of name-ctrl-forge: $(head -c 600 "$tmp/out" | od -c | head -20)"
	fails=$((fails + 1))
fi
expect 0 "" -- --cat capture/planes.tsv "$forge"
"$XPF" --cat capture/planes.tsv "$forge" 2>/dev/null | grep -qxF "2	0	/device:GPU:0${esc}	1	1	1	3	188" &&
	echo "ok: planes.tsv escapes ESC" || { echo "FAIL: planes.tsv of name-ctrl-forge"; fails=$((fails + 1)); }
expect 3 "" -- --cat diagnosis.txt "$forge"
# one finding: the header's comment lines and its first line; its other
# clauses, evidence and fixes are indented (a forged name cannot start a
# line of its own)
if [ "$(grep -c '^[^ #]' "$tmp/out")" -eq 1 ] && [ "$(grep -c '^[^ ]' "$tmp/out")" -eq $(($(grep -c '^# ' "$tmp/out") + 1)) ] && grep -qF "[read] missing-plan: jit_f${esc}(1) has no buffer assignment" "$tmp/out"; then
	echo "ok: diagnosis.txt: one finding, one first line"
else
	echo "FAIL: diagnosis.txt of name-ctrl-forge: $(head -c 600 "$tmp/out")"
	fails=$((fails + 1))
fi

# Names that are not UTF-8 or hold control characters, in every place
# they reach (issue 38): host names from file names, module names, an
# allocator's, an instruction's; a run directory's top files and compare/.
# Every text file stays UTF-8 with no control character but tab and
# newline; every JSON file parses and keeps its keys (a name that is not
# UTF-8 made jansson drop the key without a word).
# v has two findings: its allocator, GPU_0_<0xff 0xfe>bfc, is no device pool,
# so it also gets missing-runtime.
# files_clean DIR WHAT: the checks on every file under DIR
files_clean() {
	local bad
	bad=$(LC_ALL=C grep -rlP '[\x00-\x08\x0b-\x1f\x7f]' --include='*.txt' --include='*.tsv' \
		--include=README "$1")
	[ -z "$bad" ] || { echo "FAIL: $2: control characters in $(echo "$bad" | head -3)"; fails=$((fails + 1)); }
	bad=$(find "$1" -type f ! -name '*.gz' -print0 | xargs -0 -n 1 sh -c \
		'iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || echo "$1"' - | head -3)
	[ -z "$bad" ] || { echo "FAIL: $2: not UTF-8: $bad"; fails=$((fails + 1)); }
	bad=$(find "$1" -name '*.json' -print0 | xargs -0 -n 1 sh -c 'jq empty "$1" 2>/dev/null || echo "$1"' - | head -3)
	[ -z "$bad" ] || { echo "FAIL: $2: not JSON: $bad"; fails=$((fails + 1)); }
	[ -n "$bad" ] || echo "ok: $2: every file UTF-8, no control characters, JSON parses"
}
mkdir "$tmp/names"
cp "$here/bad/cases/name-ctrl.xplane.pb" "$tmp/names/"$'w\xff\xfe.xplane.pb'
cp "$here/bad/cases/name-alloc-bad-utf8.xplane.pb" "$tmp/names/"$'v\e[31m\nx.xplane.pb'
cp "$here/bad/cases/name-instr-bad-utf8.xplane.pb" "$tmp/names/u.xplane.pb"
expect 0 "" -- --export "$tmp/names-out" "$tmp/names"
files_clean "$tmp/names-out" "a run directory of hostile names"
j=$(jq -c '[.capture, [.hosts[].dir], [.hosts[].host], [.findings[].host]]' "$tmp/names-out/diagnosis.json")
[ "$j" = '["names",["u","v_[31m_x","w'$'\xef\xbf\xbd\xef\xbf\xbd''"],["u","v\u001b[31m\nx","w'$'\xef\xbf\xbd\xef\xbf\xbd''"],["u","v_[31m_x","v_[31m_x","w'$'\xef\xbf\xbd\xef\xbf\xbd''"]]' ] &&
	echo "ok: diagnosis.json keeps capture, dir, host: $j" ||
	{ echo "FAIL: diagnosis.json of hostile names: $j"; fails=$((fails + 1)); }
grep -qxF '  w\xff\xfe: 1 modules, focus a\tb\nc\d\x01(1), capacity 1.00 GiB [measured], 1 findings (hosts/w\xff\xfe/summary.txt)' \
	"$tmp/names-out/summary.txt" && echo "ok: summary.txt of the run directory escapes names" ||
	{ echo "FAIL: summary.txt of hostile names: $(od -c "$tmp/names-out/summary.txt" | head)"; fails=$((fails + 1)); }
j=$(jq -c '[.heap_peak.instruction, [.peak_buffers[].instruction]]' "$tmp/names-out/hosts/u/modules/jit_f(1)/plan.json")
[ "$j" = '["t'$'\xef\xbf\xbd''0",["add","p0","t'$'\xef\xbf\xbd''0"]]' ] && echo "ok: plan.json keeps every instruction: $j" ||
	{ echo "FAIL: plan.json instructions: $j"; fails=$((fails + 1)); }
expect 0 "" -- --base "$here/bad/cases/ok-base.xplane.pb" --export "$tmp/names-cmp" "$tmp/names"
files_clean "$tmp/names-cmp" "--base against a run directory of hostile names"
grep -qF '[read] modules-new: 1 module new (only after): a\tb\nc\d\x01(1) -> compare/hosts/w\xff\xfe/modules.tsv' \
	"$tmp/names-cmp/compare/hosts/w"$'\xff\xfe'"/diagnosis.txt" && echo "ok: compare/diagnosis.txt escapes names" ||
	{ echo "FAIL: compare/diagnosis.txt of hostile names: $(head -c 600 "$tmp/names-cmp/compare/hosts/w"*/diagnosis.txt)"; fails=$((fails + 1)); }

# Exit codes (issue 23): a trailing slash on a file; output that could not
# be written (issue 38: 6, not 2, which says the capture cannot be read);
# a diagnosis made without a module's broken plan
expect 1 "diagnosis.txt/: not a directory" -- --cat diagnosis.txt/ "$here/bad/cases/ok-base.xplane.pb"
# out_fails HOW WANT-ERROR ARGS...: xplanefs ARGS with stdout HOW (full, closed) exits 6
out_fails() {
	local how=$1 want=$2 rc
	shift 2
	if [ "$how" = full ]; then
		"$XPF" "$@" >/dev/full 2>"$tmp/err"
	else
		"$XPF" "$@" >&- 2>"$tmp/err"
	fi
	rc=$?
	if [ "$rc" -eq 6 ] && [ "$(cat "$tmp/err")" = "xplanefs: writing to stdout: $want" ]; then
		echo "ok: $* with stdout $how exits 6"
	else
		echo "FAIL: $* with stdout $how: exit $rc: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
	fi
}
if [ -w /dev/full ]; then
	out_fails full "No space left on device" --check "$here/bad/cases/ok-base.xplane.pb"
	out_fails full "No space left on device" --cat diagnosis.txt "$here/bad/cases/ok-base.xplane.pb"
else
	echo "skipping the /dev/full cases: no /dev/full"
fi
out_fails closed "Bad file descriptor" --check "$here/bad/cases/ok-base.xplane.pb"
out_fails closed "Bad file descriptor" --cat diagnosis.txt "$here/bad/cases/ok-base.xplane.pb"
# a DIR that cannot be made (as root too: /proc takes no folder)
expect 6 "/proc/self/xpf-report: cannot create" -- --export /proc/self/xpf-report "$here/bad/cases/ok-base.xplane.pb"
expect 3 "module 'jit_f(1)': unsupported wire type (byte 44) (the file was made without that part" -- --cat diagnosis.txt "$here/bad/cases/hlo-garbage.xplane.pb"
# a bad tag names no field (the field number was never read)
expect 3 "its first bytes do not decode as an XSpace (XSpace: truncated or over-long varint, byte 0)" -- --check "$here/bad/cases/varint-overlong.xplane.pb"

# A device ordinal sizes nothing beyond what the capture holds (10,000,000
# per-device entries took 1.5 GB; now a few MB, 200 MB allows a sanitizer)
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f %M -o "$tmp/rss" "$XPF" --export "$tmp/ord" "$here/bad/cases/dev-ordinal-10m.xplane.pb" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$(tail -n 1 "$tmp/rss")" -lt 204800 ]; then
		echo "ok: /device:GPU:10000000 in $(tail -n 1 "$tmp/rss") KiB"
	else
		echo "FAIL: /device:GPU:10000000: exit $rc, $(tail -n 1 "$tmp/rss") KiB: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
	fi
else
	echo "skipping the ordinal memory case: no /usr/bin/time"
fi

# Many small planes cost what they hold: 50,000 planes of one empty line
# (0.4 MB) took 327 MB when each plane's line names started a 64 KiB chunk
# (issue 25); now tens of MB, and 256 MB allows a sanitizer.
if [ -x /usr/bin/time ]; then
	python3 -c '
import sys
body = b"\x12\x02/x\x1a\x00"  # name "/x", one empty line
plane = b"\x0a" + bytes([len(body)]) + body
host = b"\x12\x09/host:CPU"
sys.stdout.buffer.write(b"\x0a" + bytes([len(host)]) + host + plane * 50000)' >"$tmp/planes.xplane.pb"
	/usr/bin/time -f %M -o "$tmp/rss" "$XPF" --cat capture/planes.tsv "$tmp/planes.xplane.pb" >"$tmp/planes.tsv" 2>"$tmp/err"
	rc=$?
	rows=$(wc -l <"$tmp/planes.tsv")
	if [ "$rc" -eq 0 ] && [ "$rows" -eq 50002 ] && [ "$(tail -n 1 "$tmp/rss")" -lt 262144 ]; then
		echo "ok: 50,000 one-line planes in $(tail -n 1 "$tmp/rss") KiB"
	else
		echo "FAIL: 50,000 one-line planes: exit $rc, $rows rows, $(tail -n 1 "$tmp/rss") KiB: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
	fi
fi

# A /host:CPU plane broken in the middle (found late): diagnosis.txt is made
# from the plan and quotes the error; --cat says it in one line and exits 3.
broken="$here/bad/cases/flip-0.xplane.pb"
where="plane 1 '/host:CPU', line 0, event 1, stat 3"
expect 3 "$where" -- --cat diagnosis.txt "$broken"
if grep -qF "(the file was made without that part" "$tmp/err" &&
	tr '\n' ' ' <"$tmp/out" | sed 's/  */ /g' |
	grep -qF "missing-runtime: the allocator events and executions could not be read: flip-0.xplane.pb: malformed capture: $where" &&
	grep -qF "(the biggest module (the runtime could not be read))" "$tmp/out"; then
	echo "ok: a diagnosis without the broken runtime says why"
else
	echo "FAIL: diagnosis.txt of $broken: $(head -c 300 "$tmp/err") / $(head -c 600 "$tmp/out")"
	fails=$((fails + 1))
fi
expect 3 "; 9 more files not written (capture/errors.txt lists why)" -- --export "$tmp/broken" "$broken"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
