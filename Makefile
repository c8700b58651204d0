# The two commands a newcomer types: `make demo` and `make test`.
# Both install what is missing (Debian packages) first, then build and run.

SWIFT ?= swift

.PHONY: deps build test demo bench clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

# The suite runs its tests one after another: several tests block a thread on purpose (child
# processes, servers), and on a 2-core machine Swift's cooperative pool has only two.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --no-parallel

demo: deps
	$(SWIFT) run odata-demo

bench: deps
	cd Benchmarks && for b in $$($(SWIFT) package describe --type json | python3 -c "import json,sys; print(' '.join(t['name'] for t in json.load(sys.stdin)['targets'] if t['type']=='executable'))"); do $(SWIFT) run -c release $$b; done

clean:
	rm -rf .build
