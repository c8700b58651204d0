#!/bin/sh
# Side by side, alternating: OnlineBenchmarks' concurrent part (64 and 256 readers, active and uncached interleaved in
# each run, ONLINE_BENCH_PART=concurrent) of two builds, PAIRS times each, with the load average before every run, then
# the median of each ratio per build. Usage:
#   scripts/bench-concurrent-ab.sh BEFORE_BINARY AFTER_BINARY [PAIRS=3] > out.txt
# Build a binary with `cd Benchmarks && swift build -c release --product OnlineBenchmarks` (copy it aside per commit).
set -e
before=$1; after=$2; pairs=${3:-3}
results=$(mktemp)
i=1
while [ "$i" -le "$pairs" ]; do
    for side in before after; do
        binary=$before; [ "$side" = after ] && binary=$after
        echo "## $side run $i — $(uptime)"
        ONLINE_BENCH_PART=concurrent "$binary" | grep -E '^\| (active|uncached)|concurrent active reads:' > "$results.run"
        cat "$results.run"
        sed -n -E "s/^- ([0-9]+) concurrent active reads: ([0-9.]+)×.*/$side \1 \2/p" "$results.run" >> "$results"
    done
    i=$((i + 1))
done
echo "## end — $(uptime)"
for side in before after; do
    for readers in 64 256; do
        echo "$side, $readers readers: active ÷ uncached $(awk -v s=$side -v r=$readers '$1 == s && $2 == r { print $3 }' "$results" | sort -n \
            | awk '{ v[NR] = $1 } END { printf "median %s of", v[int((NR + 1) / 2)]; for (k = 1; k <= NR; k++) printf " %s", v[k] }')"
    done
done
rm -f "$results" "$results.run"
