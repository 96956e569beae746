# The README's commands. `make run` starts Basalt on its embedded store;
# `make test` runs every test (CI runs exactly this, through .ci/run).
GO ?= go

.PHONY: build run test bench

build:
	$(GO) build -o bin/basalt ./cmd/basalt

run: build
	./bin/basalt

test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./store/local/
