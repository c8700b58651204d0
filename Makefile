# The two commands a newcomer types: `make demo` and `make test`.
# Both install what is missing (Debian packages) first, then build and run.

SWIFT ?= swift

.PHONY: deps build test demo bench clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo: deps
	$(SWIFT) run odata-demo

bench: deps
	cd Benchmarks && for b in $$($(SWIFT) package describe --type json | python3 -c "import json,sys; print(' '.join(t['name'] for t in json.load(sys.stdin)['targets'] if t['type']=='executable'))"); do $(SWIFT) run -c release $$b; done

clean:
	rm -rf .build
