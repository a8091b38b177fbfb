# make test: everything CI runs, on a fresh clone. It installs what the tests
# need (the npm reference servers and the real servers of ./realservers, each
# pinned by a package-lock.json) and runs the vetters, the race-enabled
# tests, short fuzzing and one pass of benchmarks.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Fuzzing runs a number of inputs per target, not a duration: with
# -fuzztime=<duration>, Go 1.26's fuzzing coordinator can fail a target with
# "context deadline exceeded" when its deadline races a busy worker
# (golang/go#75804, fixed in Go 1.27), which a loaded CI machine hits. Set
# FUZZTIME (say 5m) to fuzz every target for that long instead.
FUZZN       ?= 50000
FUZZTIME    ?=
INTEROP     := testdata/interop
REALSERVERS := testdata/realservers
CONFORMANCE := testdata/conformance

# package:FuzzTarget[:inputs] triples, each fuzzed for that many inputs (or
# FUZZN): every parser, and every function that renders or maps untrusted
# input. The counts take a few seconds each here; the TOML parser is slow.
FUZZ := ./mcphost:FuzzParse:3000 ./mcphost:FuzzModelName ./mcphost:FuzzNameChars ./mcphost:FuzzRead ./mcphost:FuzzStdout ./mcphost:FuzzElicitRequest ./mcphost:FuzzImport ./mcphost:FuzzNetworkDest ./mcphost:FuzzProtectRecord:3000 \
	./schema:FuzzClose ./schema:FuzzFromModel ./internal/jsontree:FuzzParse \
	./pin:FuzzCanonical ./pin:FuzzVisible ./pin:FuzzLoad ./pin:FuzzDiff ./pin:FuzzParseLock \
	./sandbox:FuzzParseShebang ./sandbox:FuzzEnvProgram ./sandbox:FuzzDecodeSpec \
	./sandbox:FuzzParseReport ./sandbox:FuzzParseMountPoints ./sandbox:FuzzParseStatPPid ./sandbox:FuzzParseStat ./sandbox:FuzzParseOwner ./sandbox:FuzzParseUmask ./sandbox:FuzzCheckPlan \
	./sandbox:FuzzBuildEnv ./sandbox:FuzzParseGitFile ./internal/egress:FuzzParseGrant ./internal/egress:FuzzDNS ./internal/bytesize:FuzzParse \
	./openai:FuzzResult ./openai:FuzzFunctionOutput ./openai:FuzzLoadedTools ./anthropic:FuzzResult ./anthropic:FuzzCount ./anthropic:FuzzReferencedTools ./toolsearch:FuzzParseArgs:5000 ./toolsearch:FuzzTerms \
	./internal/toolresult:FuzzRender ./cmd/mcphost:FuzzSafeJSON

.PHONY: test deps vet tidy cross unit fuzz bench example helper clean

test: deps vet tidy cross unit fuzz bench

deps:
	@if command -v npm >/dev/null 2>&1; then \
		echo "npm ci in $(INTEROP)"; \
		(cd $(INTEROP) && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
		echo "npm ci in $(REALSERVERS) (no install scripts: no browser download)"; \
		(cd $(REALSERVERS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || exit 1; \
		echo "npm ci in $(CONFORMANCE) (the MCP conformance suite; no install scripts)"; \
		(cd $(CONFORMANCE) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || exit 1; \
	else \
		echo "npm not found: the npm reference-server tests will be skipped and say so"; \
	fi

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# go.mod and go.sum must be what 'go mod tidy' makes of them.
tidy:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }

# Every package, tests included, builds and vets for the other systems an
# agent runs on (where servers run only with sandbox = "off"; see README).
# Their binaries cannot run here, so this is build and vet only.
CROSS := darwin/arm64 windows/amd64
cross:
	@set -e; for p in $(CROSS); do \
		echo "build and vet for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build ./...; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done

# The sandbox's tests run twice: a root host's helper starts the server
# from its entry, before its Go runtime, where it can (the prestart); the
# second run has the Go helper do every step instead.
unit:
	$(GO) test -race -count=1 -timeout 20m ./...
	$(GO) test -race -count=1 -timeout 10m ./sandbox -args -go-helper

fuzz:
	@set -e; for pt in $(FUZZ); do \
		pkg=$${pt%%:*}; rest=$${pt#*:}; fn=$${rest%%:*}; n=$${rest#"$$fn"}; n=$${n#:}; \
		limit=$${n:-$(FUZZN)}x; \
		if [ -n "$(FUZZTIME)" ]; then limit=$(FUZZTIME); fi; \
		echo "fuzz $$pkg $$fn for $$limit"; \
		$(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$$limit $$pkg; \
	done

# One short pass so the benchmarks never rot; numbers come from
# 'make bench BENCHTIME=2s' on a quiet machine (see BENCHMARKS.md).
BENCHTIME ?= 1x
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./...

# Rebuild the sandbox helper programs embedded in sandbox/helperbin (after
# changing package sandbox); 'make test' fails until they are current.
helper:
	$(GO) test -count=1 -run='^TestEmbeddedHelperCurrent$$' ./sandbox -update-helper

# The example server that examples/mcphost.toml runs.
example:
	$(GO) build -trimpath -o bin/ ./examples/notes

clean:
	rm -rf bin $(INTEROP)/node_modules $(REALSERVERS)/node_modules $(CONFORMANCE)/node_modules
