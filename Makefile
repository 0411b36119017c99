# tumbler — `make test` installs what the tests need and runs every test.

GO        ?= go
APT_PKGS  := redis-server redis-tools python3-redis php-cli php-redis php-predis php-symfony-lock
export TUMBLER_REQUIRE_REDIS   := 1
export TUMBLER_REQUIRE_CLIENTS := 1

.PHONY: test deps lint vet-goos unit compat fuzz build run

test: deps lint unit compat fuzz

## deps: Debian packages (redis-server is the differential oracle, python3-redis
## the Python client, php-* Symfony Lock on phpredis and Predis: the suite's
## probe checks all three) and the pinned npm clients.
deps:
	@if ! command -v redis-server >/dev/null || ! /usr/bin/python3 -c 'import redis' 2>/dev/null \
		|| ! /usr/bin/php compat/php/lock_test.php probe >/dev/null 2>&1; then \
		echo "installing $(APT_PKGS)"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y $(APT_PKGS); \
	fi
	cd compat/node && npm ci --no-audit --no-fund --loglevel=error

lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd compat && $(GO) vet ./...
	@$(MAKE) --no-print-directory vet-goos

## vet-goos: go vet, tests included, as other systems build the code, so
## that the tests compile there too: the event loop, raw reads and the
## input probe are Linux-only (*_linux.go), and a test that calls them
## belongs in a *_linux_test.go file. The root module as macOS and Windows;
## the server package as FreeBSD too (its Rlimit fields are int64, where
## macOS's are uint64: nofile_unix_test.go); compat as macOS, and its
## packages with non-unix files as Windows. No extra installs (Go
## cross-compiles). With a cold build cache each system compiles the
## dependencies once (a minute or two each on two cores); then, seconds.
vet-goos:
	@set -e; for os in darwin windows; do \
		echo "go vet GOOS=$$os GOARCH=amd64"; \
		GOOS=$$os GOARCH=amd64 $(GO) vet ./...; \
	done
	GOOS=freebsd GOARCH=amd64 $(GO) vet ./server
	cd compat && GOOS=darwin GOARCH=amd64 $(GO) vet ./...
	cd compat && GOOS=windows GOARCH=amd64 $(GO) vet ./internal/proc ./scripts

## unit: in a random order (-shuffle=on), so that a test that needs another
## to have run first, or not to have, is found; a failure prints the
## -test.shuffle seed that repeats its order. (The compat suite runs in
## file order: a shuffled run once put a slow Lua case under the race
## detector beside another package's heaviest tests and timed it out.)
unit:
	$(GO) test -race -shuffle=on -count=1 ./...

compat:
	cd compat && $(GO) test -race -count=1 ./...

## fuzz: each fuzz target for a fixed number of executions (about 20 s each
## here); the seed corpora in */testdata/fuzz/ also run as plain tests in
## `unit`. A failure writes its input under testdata/fuzz/: check it in with
## the fix. The budgets are counts, not durations: a duration budget makes
## Go's fuzz coordinator (before Go 1.27) now and then fail a clean run with
## "context deadline exceeded" as the time runs out (golang/go#75804).
## New inputs are minimized for at most 5 s (the default, 60 s, stalled a
## run for 20 s). FUZZTIME=30s (or 1000000x) overrides every budget.
FUZZTIME ?=
FUZZ_TARGETS := ./server:FuzzFramer:60000x ./luavm:FuzzScript:150000x ./luavm/internal/luaparse:FuzzParse:300000x ./luavm:FuzzPattern:100000x ./luavm:FuzzCjson:100000x ./engine:FuzzExec:800000x ./engine:FuzzRestore:300000x
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${rest#*:}; \
		if [ -n "$(FUZZTIME)" ]; then budget="$(FUZZTIME)"; fi; \
		echo "fuzz $$name ($$pkg, $$budget)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime 5s -timeout 10m $$pkg; \
	done

build:
	$(GO) build -o tumbler ./cmd/tumbler

run:
	$(GO) run ./cmd/tumbler

## bench-compare: tumbler vs redis-server, pinned side by side (bench/compare.sh;
## ROUNDS=5, QUICK=1, UNPINNED=1, OUT=bench/results-latest.md).
.PHONY: bench-compare
bench-compare:
	bash bench/compare.sh
