# The two commands a newcomer types: `make demo` and `make test`.
# Both install what is missing (Debian packages) first, then build and run.

SWIFT ?= swift
SHELL := /bin/bash

.PHONY: deps build test demo example bench bench-generator bench-uncached bench-concurrent bench-cache-scale bench-fleet-hosts bench-instructions bench-instructions-offline docs guide proxies proxies-check clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

# The suite runs its tests one after another: several tests block a thread on purpose (child
# processes, servers), and on a 2-core machine Swift's cooperative pool has only two.
test: deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) ./scripts/run-tests.sh test --skip-build --no-parallel

demo: deps
	$(SWIFT) run odata-demo

# The example service (Examples/ODataGateway, a package of its own): builds the fixture producer and the
# gateway, starts the producer on a free port of 127.0.0.1, runs the gateway against it and prints curl
# lines to try; Ctrl-C stops the gateway gracefully, then the producer (by its PID).
example: deps
	$(SWIFT) build --product odata-fixture-server
	cd Examples/ODataGateway && $(SWIFT) build
	SWIFT=$(SWIFT) ./scripts/run-example.sh

# OfflineBenchmarks serves its data with the release build of the fixture producer, and runs OfflineSQLiteFloor
# (its SQLite side) as a child process: everything is built first, the floor is not run on its own (nor
# OfflineKeyInstructions: `make bench-instructions-offline`).
bench: deps
	$(SWIFT) build -c release --product odata-fixture-server
	$(SWIFT) build -c release --product odata-fleet-instance
	cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching && for b in $$($(SWIFT) package describe --type json | python3 -c "import json,sys; print(' '.join(t['name'] for t in json.load(sys.stdin)['targets'] if t['type']=='executable' and t['name'] not in ('OfflineSQLiteFloor', 'OfflineKeyInstructions')))"); do $(SWIFT) run -c release $$b; done

# OnlineBenchmarks' uncached-GET rows in wall-clock time (issue 31 row 1: store ÷ bare CurlTransport GET at 1 KiB and
# 64 KiB, default telemetry ÷ Telemetry.disabled), interleaved in one process, three runs one after another: for
# re-running the wall-clock rows of docs/notes/cost.md on a quiet machine.
bench-uncached: deps
	cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching --product OnlineBenchmarks && for run in 1 2 3; do ONLINE_BENCH_ONLY="=CurlTransport alone, GET 200 (floor of an uncached read)|=store, uncached GET|=store, uncached GET, telemetry disabled" $(SWIFT) run -c release OnlineBenchmarks; done

# OnlineBenchmarks' concurrent part in wall-clock time (issue 31 row 1: 64 and 256 concurrent active ÷ uncached reads),
# three runs one after another with the load average before each: for re-running the wall-clock rows of
# docs/notes/cost.md on a quiet machine (two builds side by side: scripts/bench-concurrent-ab.sh).
bench-concurrent: deps
	cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching --product OnlineBenchmarks && for run in 1 2 3; do uptime; \
	  ONLINE_BENCH_PART=concurrent .build/release/OnlineBenchmarks | grep -E '^\| (active|uncached)|concurrent active reads:' || exit 1; done; uptime

# CacheBenchmarks' scale part (issue 31 Done-when 3): three runs at 1k and 100k, then one at 1k / 100k / 1M (one at a
# time: a 1M run holds ~8.8 GiB), each with the load average before and after; CACHE_SCALE_RUNS sets the 1M runs.
CACHE_SCALE_RUNS ?= 1
bench-cache-scale: deps
	cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching --product CacheBenchmarks && for run in 1 2 3; do uptime; \
	  CACHE_SCALE=1000,100000 .build/release/CacheBenchmarks || exit 1; uptime; done; \
	  for run in $$(seq $(CACHE_SCALE_RUNS)); do uptime; CACHE_SCALE=1000,100000,1000000 .build/release/CacheBenchmarks || exit 1; uptime; done

# FleetBenchmarks' across-hosts rows (instances in odata-fleet-instance processes on three network namespaces, the
# Redis nodes spread over them; needs root), three runs with the load average before and after each.
bench-fleet-hosts: deps
	$(SWIFT) build -c release --product odata-fleet-instance
	cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching --product FleetBenchmarks && for run in 1 2 3; do uptime; \
	  FLEET_BENCH_SINGLE=0 FLEET_BENCH_LOOPBACK=0 .build/release/FleetBenchmarks || exit 1; uptime; done

# OnlineBenchmarks' key rows in instructions (callgrind over BENCH_CALLS calls each, release): the bare CurlTransport
# GET, the store's uncached GET with the default telemetry and with Telemetry.disabled, the cache lookup and the
# passive read, side by side with their floors. Counts do not depend on the machine's load. Needs valgrind.
BENCH_CALLS ?= 200
bench-instructions: deps
	cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching --product OnlineBenchmarks
	python3 scripts/bench-instructions.py "$$(cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching --show-bin-path)/OnlineBenchmarks" $(BENCH_CALLS)

# OfflineBenchmarks' key lookup in instructions (callgrind over BENCH_CALLS lookups each, release): through read(_:),
# await execute(_:) and the typed DataService, over a store of OFFLINE_BENCH_N entities (default 100,000) that a
# quick run of the benchmark downloads once into .build/offline-bench-keys-N and keeps. Needs valgrind.
bench-instructions-offline: deps
	$(SWIFT) build -c release --product odata-fixture-server
	cd Benchmarks && for p in OfflineBenchmarks OfflineSQLiteFloor OfflineKeyInstructions; do $(SWIFT) build -c release --disable-build-manifest-caching --product $$p || exit 1; done
	kept=.build/offline-bench-keys-$${OFFLINE_BENCH_N:-100000}; bin="$$(cd Benchmarks && $(SWIFT) build -c release --disable-build-manifest-caching --show-bin-path)"; \
	  test -f $$kept/bench/store.db || OFFLINE_BENCH_KEEP=$$PWD/$$kept OFFLINE_BENCH_SQLITE=0 OFFLINE_BENCH_SMALL_PAGE=0 \
	    OFFLINE_BENCH_REDOWNLOAD=0 OFFLINE_BENCH_UPLOAD=0 $$bin/OfflineBenchmarks > /dev/null || exit 1; \
	  python3 scripts/bench-instructions.py --offline $$bin/OfflineKeyInstructions $$kept $(BENCH_CALLS)

# The user's guide (DocC catalogs in Sources/OnlineStore and Sources/OfflineStore) as static websites:
# .build/docs/OnlineStore.doccarchive and .build/docs/OfflineStore.doccarchive. A broken symbol link or
# any other DocC warning fails the target.
docs: deps
	mkdir -p .build
	$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation \
	  --target OnlineStore --target OfflineStore --output-path .build/docs --warnings-as-errors

# The user's guide's Swift blocks, compiled with the tests (Tests/GuideTests): run after editing one.
guide:
	python3 scripts/guide_blocks.py > Tests/GuideTests/GuideBlocks.swift

# The typed proxies in Proxies/ are odata-proxygen's output for the $metadata documents in Proxies/Metadata:
# `make proxies` writes them anew; `make proxies-check` (CI) regenerates them aside and fails on any difference.
# Each entry: document:service type:directory[:referenced document, below Proxies/Metadata].
PROXIES = Northwind:NorthwindService:Northwind GWSAMPLE_BASIC:GWSampleBasicService:GWSampleBasic API_PRODUCT:ProductService:APIProduct \
  RealServices:RealService:RealServices:Vocabularies/Permissions.xml

# The generator at scale (read, generate, compile an --only closure): GRAPH=path to Microsoft Graph's v1.0 $metadata.
bench-generator:
	scripts/bench-generator.sh $(GRAPH) $(SETS)

proxies:
	$(SWIFT) build --product odata-proxygen
	for p in $(PROXIES); do IFS=: read md service dir ref <<< "$$p"; \
	  $$($(SWIFT) build --show-bin-path)/odata-proxygen --metadata Proxies/Metadata/$$md.xml \
	    $${ref:+--reference Proxies/Metadata/$$ref} --output Proxies/$$dir/$$md.swift --service-name $$service || exit 1; done

proxies-check:
	$(SWIFT) build --product odata-proxygen
	mkdir -p .build/proxies-check
	for p in $(PROXIES); do IFS=: read md service dir ref <<< "$$p"; \
	  $$($(SWIFT) build --show-bin-path)/odata-proxygen --metadata Proxies/Metadata/$$md.xml \
	    $${ref:+--reference Proxies/Metadata/$$ref} --output .build/proxies-check/$$md.swift --service-name $$service > /dev/null 2>&1 || exit 1; \
	  diff -u Proxies/$$dir/$$md.swift .build/proxies-check/$$md.swift || { echo "Proxies/$$dir/$$md.swift is stale: run make proxies"; exit 1; }; done
	@echo "proxies-check: the generated proxies are current"

clean:
	rm -rf .build

# --- Proof under stress (docs/notes/proof.md) -------------------------------------------------------
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= FuzzJSON FuzzErrorBody FuzzMultipart FuzzJSONBatch FuzzFilter
SOAK_SECONDS ?= 60

.PHONY: fuzz fuzz-short sanitize soak soak-short soak-cluster

# libFuzzer: each target runs FUZZ_SECONDS, starting from the seeds in Fuzz/Corpus/<target>; the
# inputs it discovers go to .build-fuzz/corpus/<target> (kept between runs, not committed). A crash
# leaves its input in Fuzz/Artifacts/ and stops the run: turn it into a test in Tests/ProofTests.
# A target with a dictionary Fuzz/<target>.dict (today FuzzFilter: the OData URL grammar's tokens)
# gets it as -dict=.
fuzz: deps
	mkdir -p Fuzz/Artifacts
	for t in $(FUZZ_TARGETS); do \
	  (cd Fuzz && $(SWIFT) build -c debug --sanitize=fuzzer --product $$t --scratch-path ../.build-fuzz) || exit 1; \
	  mkdir -p .build-fuzz/corpus/$$t; \
	  SWIFT_BACKTRACE=enable=no .build-fuzz/debug/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=Fuzz/Artifacts/$$t- $$(test -f Fuzz/$$t.dict && echo -dict=Fuzz/$$t.dict) \
	    .build-fuzz/corpus/$$t Fuzz/Corpus/$$t || exit 1; \
	done

fuzz-short:
	$(MAKE) fuzz FUZZ_SECONDS=10

# The whole suite under ThreadSanitizer, then AddressSanitizer, each in its own scratch path; a report
# stops the test process (and its children: ilodata, odata-soak), so any finding fails the run — except the
# tool's own false positives listed, each with its reason, in scripts/tsan-suppressions.txt.
# LeakSanitizer is off: at exit it reports the XCTest runner's and SIGKILLed children's live objects
# (see docs/notes/proof.md); leaks are checked by the soak's flat-RSS column instead.
# Each build and run is a target of its own, so that CI (.ci/run) can build one beside another's tests.
# The sanitizer builds carry line tables, not full debug info: a report needs each frame's function, file and line,
# not variables or types, and the smaller objects build and link faster (a clean ThreadSanitizer build 296 → 264 s,
# 1.7 → 1.4 GB; docs/RELIABILITY.md, "Sanitizers"). The tests run with the same flags, so that `--skip-build` finds the same build.
# PART=first runs the tests that FIRST_PART matches, PART=rest the others (CI runs the halves side by side, each
# test still one at a time in its process, `--ignore-lock` so that the second does not wait for SwiftPM's lock of
# the build directory); no PART runs the whole suite. The halves are near even under ThreadSanitizer (CI, session 31).
.PHONY: build-tsan test-tsan build-asan test-asan
sanitize: build-tsan test-tsan build-asan test-asan
SANITIZER_DEBUG_INFO = -Xswiftc -gline-tables-only -Xcc -gline-tables-only
FIRST_PART = ^(CurlHTTP|Guide|LMDB|OData|OfflineStoreTests\.[A-L])
PART_ARGUMENTS = $(if $(filter first,$(PART)),--ignore-lock --filter '$(FIRST_PART)',$(if $(filter rest,$(PART)),--ignore-lock --skip '$(FIRST_PART)'))

build-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan $(SANITIZER_DEBUG_INFO)

test-tsan: build-tsan
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/scripts/tsan-suppressions.txt" SWIFT=$(SWIFT) ./scripts/run-tests.sh tsan$(PART:%=-%) --skip-build --no-parallel --sanitize=thread --scratch-path .build-tsan $(SANITIZER_DEBUG_INFO) $(PART_ARGUMENTS)

build-asan: deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan $(SANITIZER_DEBUG_INFO)

test-asan: build-asan
	ASAN_OPTIONS=detect_leaks=0 SWIFT=$(SWIFT) ./scripts/run-tests.sh asan$(PART:%=-%) --skip-build --no-parallel --sanitize=address --scratch-path .build-asan $(SANITIZER_DEBUG_INFO) $(PART_ARGUMENTS)

# The soak starts the producer (odata-fixture-server, built beside it) as a process of its own.
soak: deps
	$(SWIFT) build --product odata-fixture-server
	$(SWIFT) build --product odata-soak
	SOAK_SECONDS=$(SOAK_SECONDS) $$($(SWIFT) build --show-bin-path)/odata-soak
	SOAK_SECONDS=$(SOAK_SECONDS) $$($(SWIFT) build --show-bin-path)/odata-soak --cluster

# The cluster profile alone: the Redis tier on a 3 + 3 Redis Cluster, a master SIGKILLed and restarted mid-run.
soak-cluster: deps
	$(SWIFT) build --product odata-fixture-server
	$(SWIFT) build --product odata-soak
	SOAK_SECONDS=$(SOAK_SECONDS) $$($(SWIFT) build --show-bin-path)/odata-soak --cluster

soak-short: deps
	$(SWIFT) build --product odata-fixture-server
	$(SWIFT) build --product odata-soak
	$$($(SWIFT) build --show-bin-path)/odata-soak --short
