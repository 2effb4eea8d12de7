#!/usr/bin/env bash
# The bad-input corpus (tests/bad/cases, made by make-corpus.py) against
# expect.tsv.  For every case:
#  - `xplanefs --check CASE` exits with the expected code; on failure stderr is
#    one line, "xplanefs: ...", holding the expected substring;
#  - `xplanefs --export DIR CASE` exits with the expected code (`*`: 0 or 3,
#    for files whose renderers may or may not need the broken part), and
#    nothing is lost: every file it reports broken is absent from DIR, and its
#    message (or its path) is in DIR/capture/errors.txt; when --check failed
#    but the export got through, errors.txt carries --check's message; its
#    stderr is one line (the first file it could not make, and how many more);
#  - `xplanefs --cat diagnosis.txt CASE`: stderr is empty when it exits 0 and
#    one "xplanefs: ..." line otherwise (a diagnosis made without a broken
#    part says so);
#  - never a crash, a hang (30 s), or a sanitizer report.
#   test-bad.sh XPLANEFS [CASE-NAME...]
set -u
XPF=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0
only=" $* "

fail() {
	echo "FAIL: $case: $*"
	fails=$((fails + 1))
}

# run LOG ARGS...: run xplanefs, set $rc; a crash, hang or sanitizer report fails.
run() {
	local log=$1
	shift
	timeout -k 5 30 "$XPF" "$@" >"$log.out" 2>"$log.err"
	rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "xplanefs $1 hangs (killed after 30 s)"
		return 1
	fi
	if [ "$rc" -ge 128 ] || grep -qE 'Sanitizer|runtime error:|AddressSanitizer|LeakSanitizer' "$log.err"; then
		fail "xplanefs $1 crashed (exit $rc): $(grep -m3 -E 'ERROR|runtime error|SUMMARY' "$log.err" | tr '\n' ' ')"
		return 1
	fi
	return 0
}

while IFS=$'\t' read -r case check_rc check_msg export_rc errors_msg; do
	case $case in '' | '#'*) continue ;; esac
	[ "$only" != "  " ] && [[ $only != *" $case "* ]] && continue
	f=$here/cases/$case
	if [ ! -f "$f" ]; then
		fail "missing (run tests/bad/make-corpus.py)"
		continue
	fi
	n=$((n + 1))
	ok=1
	# --check
	if run "$tmp/c" --check "$f"; then
		if [ "$rc" != "$check_rc" ]; then
			fail "--check exits $rc, want $check_rc: $(head -c 300 "$tmp/c.err")"
			ok=0
		elif [ "$rc" -ne 0 ]; then
			first=$(head -n 1 "$tmp/c.err")
			if [ "$(grep -c . "$tmp/c.err")" -ne 1 ] || [[ $first != "xplanefs: "* ]]; then
				fail "--check error is not one 'xplanefs: ...' line: $(head -c 300 "$tmp/c.err")"
				ok=0
			elif [ "$check_msg" != - ] && [[ $first != *"$check_msg"* ]]; then
				fail "--check error lacks '$check_msg': $first"
				ok=0
			fi
		elif [ "$(tail -n 1 "$tmp/c.out")" != ok ]; then
			fail "--check exits 0 but does not end with 'ok'"
			ok=0
		fi
	else
		ok=0
	fi
	check_err=$(head -n 1 "$tmp/c.err")
	# --export
	out=$tmp/x-$n
	if run "$tmp/x" --export "$out" "$f"; then
		if [ "$export_rc" = '*' ]; then
			if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
				fail "--export exits $rc, want 0 or 3: $(head -c 300 "$tmp/x.err")"
				ok=0
			fi
		elif [ "$rc" != "$export_rc" ]; then
			fail "--export exits $rc, want $export_rc: $(head -c 300 "$tmp/x.err")"
			ok=0
		fi
		if [ "$(grep -c . "$tmp/x.err")" -gt 1 ]; then
			fail "--export says more than one line: $(head -c 400 "$tmp/x.err")"
			ok=0
		fi
		errs=$out/capture/errors.txt
		if [ -f "$errs" ]; then
			# Every broken file: absent, and named (or its message shown) in errors.txt.
			while IFS= read -r l; do
				rest=${l#"xplanefs: $out/"}
				[ "$rest" = "$l" ] && continue
				path=${rest%%: *}
				msg=${rest#*: }
				msg=${msg%; [0-9]* more files not written (capture/errors.txt lists why)}
				if [ -e "$out/$path" ]; then
					fail "--export wrote $path although it reports it broken"
					ok=0
				fi
				if ! grep -qF -- "$path" "$errs" && ! grep -qF -- "$msg" "$errs"; then
					fail "--export: $path is broken ($msg) but capture/errors.txt says nothing of it"
					ok=0
				fi
			done <"$tmp/x.err"
			if [ "$check_rc" = 3 ]; then
				msg=${check_err#xplanefs: }
				if ! grep -qF -- "${msg#*: }" "$errs"; then
					fail "--check found '${msg}' but capture/errors.txt does not say it"
					ok=0
				fi
			fi
			if [ "$errors_msg" != - ] && ! grep -qF -- "$errors_msg" "$errs"; then
				fail "capture/errors.txt lacks '$errors_msg'"
				ok=0
			fi
			# a file that failed is named in errors.txt as "<part> error: <path>: ..."
			if [ "$rc" -eq 0 ] && grep -Eq '^[a-z]+ error: [^ ]+/' "$errs"; then
				fail "--export exits 0 but capture/errors.txt names a failed file: $(grep -Em1 '^[a-z]+ error: [^ ]+/' "$errs")"
				ok=0
			fi
			# Names reach files escaped (SPEC §3, issue 38): no control
			# character but tab and newline in a text file, every file
			# but the gzip'd profiles UTF-8, every JSON file JSON
			bad=$(LC_ALL=C grep -rlP '[\x00-\x08\x0b-\x1f\x7f]' --include='*.txt' \
				--include='*.tsv' --include=README "$out")
			[ -z "$bad" ] || { fail "control characters in ${bad//$out\//}"; ok=0; }
			find "$out" -type f ! -name '*.gz' -print0 | xargs -0 -n 1 sh -c \
				'iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || echo "${1#'"$out"'/}"' - >"$tmp/u8"
			[ -s "$tmp/u8" ] && { fail "not UTF-8: $(tr '\n' ' ' <"$tmp/u8")"; ok=0; }
			find "$out" -name '*.json' -print0 | xargs -0 -n 1 sh -c \
				'jq empty "$1" >/dev/null 2>&1 || echo "${1#'"$out"'/}"' - >"$tmp/js"
			[ -s "$tmp/js" ] && { fail "not JSON: $(tr '\n' ' ' <"$tmp/js")"; ok=0; }
		elif [ "$rc" -eq 0 ]; then
			fail "--export exits 0 but wrote no capture/errors.txt"
			ok=0
		elif [ "$errors_msg" != - ]; then
			fail "--export refused the capture (exit $rc); expected a late failure in errors.txt"
			ok=0
		fi
	else
		ok=0
	fi
	rm -rf "$out"
	# --cat diagnosis.txt
	if run "$tmp/d" --cat diagnosis.txt "$f"; then
		lines=$(grep -c . "$tmp/d.err")
		if { [ "$rc" -eq 0 ] && [ "$lines" -ne 0 ]; } || { [ "$rc" -ne 0 ] && { [ "$lines" -ne 1 ] ||
			[[ $(head -n 1 "$tmp/d.err") != "xplanefs: "* ]]; }; }; then
			fail "--cat diagnosis.txt exits $rc with $lines line(s) on stderr: $(head -c 300 "$tmp/d.err")"
			ok=0
		fi
	else
		ok=0
	fi
	[ "$ok" = 1 ] && echo "ok: $case (check $check_rc, export $export_rc)"
done <"$here/expect.tsv"

echo "$n cases, $fails failures"
[ "$n" -ge 1 ] || exit 1
[ "$fails" -eq 0 ]
