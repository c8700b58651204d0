#!/bin/sh
# Side by side, alternating: the cache-scale benchmark (CacheBenchmarks with CACHE_SCALE) of two builds,
# RUNS times each, with the load average before every run. Usage:
#   scripts/bench-cache-scale-ab.sh BEFORE_BINARY AFTER_BINARY [RUNS=3] [SCALE=1000,100000] > out.txt
# Build a binary with `cd Benchmarks && swift build -c release --product CacheBenchmarks` (copy it aside per commit).
set -e
before=$1; after=$2; runs=${3:-3}; scale=${4:-1000,100000}
i=1
while [ "$i" -le "$runs" ]; do
    for side in before after; do
        binary=$before; [ "$side" = after ] && binary=$after
        echo "## $side run $i — $(uptime)"
        CACHE_SCALE=$scale "$binary" | grep -E '^\| [0-9]|^Lookup|^Targets|^Fill per'
    done
    i=$((i + 1))
done
echo "## end — $(uptime)"
