#!/usr/bin/env bash
# The generator at scale: for a large $metadata document (Microsoft Graph v1.0: fetch it yourself, it is not
# committed, e.g. msgraph-metadata's schemas/v1.0-Prod.csdl), prints the median of 3 runs of the release
# odata-proxygen (read time, generation time, types, size and files of the whole document's output), then the
# compile time of an --only closure (debug and release, the generated module alone, its dependencies built first).
#
#   scripts/bench-generator.sh GRAPH.xml [SETS]      (SETS default: users,groups)
set -euo pipefail
document=$(realpath "$1")
sets=${2:-users,groups}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
swift build -c release --product odata-proxygen > /dev/null
tool=$(swift build -c release --show-bin-path)/odata-proxygen
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"

run() { # prints "read generated" seconds of one run
  "$tool" --metadata "$document" --output "$work/out/$1/Graph.swift" --timings ${2:+--only "$2"} 2>&1 >/dev/null \
    | sed -n 's/.*timings: read \([0-9.]*\) s, generated \([0-9.]*\) s, \([0-9]*\) types/\1 \2 \3/p'
}
median() { sort -n | sed -n 2p; }
for label in whole only; do
  only=""; [ "$label" = only ] && only=$sets
  for i in 1 2 3; do rm -rf "$work/out/$label"; run "$label" "$only"; done > "$work/$label.times"
  bytes=$(cat "$work/out/$label"/*.swift | wc -c); files=$(ls "$work/out/$label" | wc -l)
  echo "$label${only:+ ($only)}: read $(cut -d' ' -f1 "$work/$label.times" | median) s, generated $(cut -d' ' -f2 "$work/$label.times" | median) s (median of 3), $(head -1 "$work/$label.times" | cut -d' ' -f3) types, $bytes bytes in $files files"
done

mkdir -p "$work/pkg/Sources/Closure"
cp "$work/out/only"/*.swift "$work/pkg/Sources/Closure/"
cat > "$work/pkg/Package.swift" <<PKG
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "closure", dependencies: [.package(path: "$root")],
    targets: [.target(name: "Closure", dependencies: [.product(name: "ODataTyped", package: "$(basename "$root")")])])
PKG
cd "$work/pkg"
for configuration in debug release; do
  swift build -c $configuration --target ODataTyped > /dev/null 2>&1
  start=$(date +%s.%N)
  swift build -c $configuration --target Closure > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
  echo "compile of the $sets closure ($configuration, the generated module alone): $(echo "$(date +%s.%N) - $start" | bc) s"
done
