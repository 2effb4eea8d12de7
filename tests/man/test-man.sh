#!/usr/bin/env bash
# The man page (SPEC §9): it renders without warnings (groff -ww, and
# mandoc -T lint where installed), has the sections a man page has, names
# the same options as `xplanefs --help`, and `meson install --destdir` puts
# it and the binary in place.
# Usage: test-man.sh XPLANEFS MANPAGE
set -u
XPF=$1
MAN=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if command -v groff >/dev/null; then
	groff -ww -man -Tutf8 "$MAN" >"$tmp/man.txt" 2>"$tmp/groff.err"
	[ -s "$tmp/groff.err" ] && fail "groff -ww warns: $(head -c 500 "$tmp/groff.err")"
	[ -s "$tmp/man.txt" ] || fail "groff rendered nothing"
	echo "ok: groff -ww -man renders $(wc -l <"$tmp/man.txt") lines, no warning"
else
	echo "skip: groff is absent: the render check did not run"
fi
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$MAN" >"$tmp/lint" 2>&1 || fail "mandoc -T lint: $(head -c 500 "$tmp/lint")"
	echo "ok: mandoc -T lint"
else
	echo "skip: mandoc is absent (apt install mandoc): the lint did not run"
fi
for s in NAME SYNOPSIS DESCRIPTION OPTIONS "THE TREE" "EXIT STATUS" EXAMPLES "SEE ALSO"; do
	grep -qx "\.SH \"\{0,1\}$s\"\{0,1\}" "$MAN" || fail "no section $s"
done
grep -q '@VERSION@' "$MAN" && fail "@VERSION@ not substituted"

# Options: in --help, the option column of the usage and option lines; in the
# man page, the tag line after each .TP of OPTIONS.
"$XPF" --help >"$tmp/help" || fail "--help exits non-zero"
sed -n 's/^  \(xplanefs \)\{0,1\}\(-[^ ].*\)$/\2/p' "$tmp/help" | sed 's/   .*//' |
	grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u >"$tmp/help.opts"
awk '/^\.SH/ { on = ($2 == "OPTIONS") } on && prev == ".TP" { print } { prev = $0 }' "$MAN" |
	sed 's/\\-/-/g' | grep -oE -- '(^|[ "])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' "' | sort -u >"$tmp/man.opts"
if ! diff "$tmp/help.opts" "$tmp/man.opts" >"$tmp/opts.diff"; then
	fail "--help (<) and the man page (>) name different options: $(tr '\n' ' ' <"$tmp/opts.diff")"
else
	echo "ok: --help and the man page name the same $(wc -l <"$tmp/help.opts") options: $(tr '\n' ' ' <"$tmp/help.opts")"
fi

# meson install --destdir: the binary and the man page land under the prefix.
if [ -n "${XPF_BUILD:-}" ] && command -v meson >/dev/null; then
	if meson install -C "$XPF_BUILD" --no-rebuild --destdir "$tmp/dest" >"$tmp/install.log" 2>&1; then
		bin=$(find "$tmp/dest" -path '*/bin/xplanefs' -type f | head -1)
		page=$(find "$tmp/dest" -path '*/man1/xplanefs.1' -type f | head -1)
		[ -n "$bin" ] && [ -x "$bin" ] || fail "meson install put no bin/xplanefs"
		[ -n "$page" ] || fail "meson install put no man1/xplanefs.1"
		[ -n "$bin" ] && [ -n "$page" ] && echo "ok: meson install --destdir: ${bin#"$tmp/dest"}, ${page#"$tmp/dest"}"
	else
		fail "meson install --destdir: $(tail -c 500 "$tmp/install.log")"
	fi
fi
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
