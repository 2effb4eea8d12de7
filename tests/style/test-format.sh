#!/bin/sh
# The tree follows .clang-format (CONTRIBUTING.md): every file under src/
# formats to itself.  Skips (77) where clang-format is not installed.
#   test-format.sh SOURCE_ROOT
root=${1:?usage: test-format.sh SOURCE_ROOT}
command -v clang-format >/dev/null 2>&1 || { echo "skip: no clang-format"; exit 77; }
cd "$root" || exit 1
if clang-format --dry-run --Werror $(find src -name "*.[ch]"); then
	echo "ok: $(find src -name "*.[ch]" | wc -l) files follow .clang-format"
else
	echo "FAIL: clang-format -i the files above (see CONTRIBUTING.md)"
	exit 1
fi
