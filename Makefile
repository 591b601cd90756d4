# Convenience targets; README.md gives the two commands that matter.
GO ?= go

.PHONY: build test race bench lint fuzz

build:
	$(GO) build -o bin/fabemu ./cmd/fabemu

test:
	$(GO) test ./...

# Every package that starts goroutines or uses sync (found by the script),
# with the tests' short windows as CI runs it (.ci/run says why the TCP
# transfer test is left out).
race:
	$(GO) test -race -short -skip '^TestTCPTransferEveryDeliveryMode$$' $$(.ci/race-packages)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./fabric/... ./nic/... ./reorder/... ./tracefmt/...

lint:
	gofmt -l . | (! grep .)
	$(GO) vet ./...
	staticcheck ./...

# Each fuzz target for a short while (FUZZTIME=30s make fuzz for longer).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep ^Fuzz); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done
