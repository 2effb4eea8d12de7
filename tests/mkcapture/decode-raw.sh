#!/bin/sh
# Every scenario capture is a well-formed protobuf: protoc --decode_raw reads it
# whole (it knows nothing of our .proto files).  Skips when protoc is absent.
set -eu
mk=$1
command -v protoc >/dev/null 2>&1 || { echo "protoc not installed: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$mk" --list | cut -f1 | while read -r s; do
	"$mk" "$s" "$dir/$s.xplane.pb"
	if [ -d "$dir/$s.xplane.pb" ]; then files=$(ls "$dir/$s.xplane.pb"/*.xplane.pb); else files="$dir/$s.xplane.pb"; fi
	for f in $files; do
		protoc --decode_raw < "$f" > "$dir/out.txt"
		grep -q '"/host:metadata"' "$dir/out.txt"
		grep -q '"/host:CPU"' "$dir/out.txt"
		grep -q '"/device:GPU:0"' "$dir/out.txt"
		echo "ok $s $(basename "$f") $(wc -c < "$f") bytes"
		echo "$s" >>"$dir/checked"
	done
done
# the generator listed scenarios and every one was read
n=$(wc -l <"$dir/checked" 2>/dev/null || echo 0)
[ "$n" -ge "$("$mk" --list | wc -l)" ] || { echo "FAIL: only $n capture(s) checked"; exit 1; }
