#!/usr/bin/env bash
# Runs `swift test` with the given arguments, its output teed to .build/test-logs/<name>.log; on a failure,
# repeats each failed test's issues at the end, where a CI log's tail shows them, and for a sanitizer's report
# the tests that had started before it and the report itself (both accesses' stacks, lines cut at 240 characters).
#   scripts/run-tests.sh <name> <swift test arguments...>
set -uo pipefail
name=$1; shift
mkdir -p .build/test-logs
log=.build/test-logs/$name.log
"${SWIFT:-swift}" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "=== $name failed (exit $status); the failures, from $log:"
  grep -E '✘|recorded an issue|error:|Fatal error|ThreadSanitizer|AddressSanitizer|SUMMARY:' "$log" | grep -v '^.*✔' | tail -n 60
  first=$(grep -n -m1 -E '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer)' "$log" | cut -d: -f1)
  if [ -n "$first" ]; then
    echo "=== the tests started last before the sanitizer's first report (line $first of $log):"
    head -n "$first" "$log" | grep -E "Test .*started|Test Case .*started" | tail -n 4
    echo "=== the sanitizer's first report:"
    tail -n "+$first" "$log" | sed -n '1,/^SUMMARY:/p' | grep -v -E '^ +#([3-9][0-9]|2[5-9]) ' | cut -c1-240 | head -n 150
  fi
fi
exit "$status"
