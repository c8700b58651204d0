#!/usr/bin/env bash
# Runs `swift test` with the given arguments, its output teed to .build/test-logs/<name>.log; on a failure,
# repeats each failed test's issues at the end, where a CI log's tail shows them.
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
fi
exit "$status"
