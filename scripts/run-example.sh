#!/usr/bin/env bash
# `make example`: the fixture producer on a free port of 127.0.0.1 in the background, the ODataGateway
# example (Examples/ODataGateway) in the foreground against it. Ctrl-C (SIGINT) or SIGTERM shuts the
# gateway down gracefully; the producer is then stopped by its PID.
set -euo pipefail
SWIFT=${SWIFT:-swift}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

producer_bin=$($SWIFT build --show-bin-path)/odata-fixture-server
gateway_bin=$(cd Examples/ODataGateway && $SWIFT build --show-bin-path)/ODataGateway
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

log=$(mktemp)
"$producer_bin" --port 0 > "$log" 2>&1 &
producer=$!
trap 'kill "$producer" 2>/dev/null || true; wait "$producer" 2>/dev/null || true; rm -f "$log"; echo "example: producer (PID $producer) stopped"' EXIT
for _ in $(seq 1 200); do grep -q "serving" "$log" && break; sleep 0.1; done
service_root=$(sed -n 's/^odata-fixture-server: serving \([^ ]*\) .*/\1/p' "$log")
[ -n "$service_root" ] || { echo "example: the fixture producer did not start:"; cat "$log"; exit 1; }

port=${GATEWAY_PORT:-$(free_port)}
cache_dir=${GATEWAY_CACHE_DIR:-$(mktemp -d)}
cat <<TEXT
example: fixture producer (PID $producer) serves $service_root
example: ODataGateway on http://127.0.0.1:$port — try, in another terminal:
  curl -i http://127.0.0.1:$port/products/1        # the back end answers (X-Gateway-Source: back-end)
  curl -i http://127.0.0.1:$port/products/1        # again: cached copy revalidated
  kill $producer                                   # stop the back end
  curl -i http://127.0.0.1:$port/products/1        # passive fallback (X-Gateway-Source: cache-fallback)
  curl -s http://127.0.0.1:$port/metrics | grep odata_
Ctrl-C stops the gateway (graceful shutdown), then the producer.
TEXT
status=0
ODATA_SERVICE_ROOT="$service_root" GATEWAY_PORT="$port" GATEWAY_CACHE_DIR="$cache_dir" "$gateway_bin" || status=$?
exit "$status"
