# soakd: the two commands a new user needs are `make run` and `make test`.
GO    ?= go
BIN   := bin/soakd
PKGS  := ./...

.PHONY: all build run test vet fmt-check generate check-generate fuzz dashboards stack clean gate-check bench-driver

all: build

## build: compile soakd into bin/soakd
build:
	$(GO) build -buildvcs=auto -o $(BIN) .

## run: run the default (quick) suite once; exits with the verdict's code
run: build
	./$(BIN) run

## test: format, vet, generated-code and race-enabled tests (what CI runs)
test: fmt-check vet check-generate
	$(GO) test -race -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## generate: regenerate gqlgen code from graph/schema.graphqls
generate:
	$(GO) generate ./...

## check-generate: fail when generated code is stale
check-generate:
	$(GO) generate ./...
	@git diff --exit-code -- graph/generated.go || { echo "generated code is stale: run make generate and commit"; exit 1; }

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./daemon -run '^$$' -fuzz FuzzLoadConfig -fuzztime $(FUZZTIME)
	$(GO) test ./control -run '^$$' -fuzz . -fuzztime $(FUZZTIME)
	$(GO) test ./graph -run '^$$' -fuzz FuzzGraphQLRequest -fuzztime $(FUZZTIME)
	$(GO) test ./graph -run '^$$' -fuzz FuzzGraphQLLimits -fuzztime $(FUZZTIME)
	$(GO) test ./api -run '^$$' -fuzz . -fuzztime $(FUZZTIME)
	$(GO) test ./profiles -run '^$$' -fuzz FuzzParseBaggage -fuzztime $(FUZZTIME)
	$(GO) test ./workloads -run '^$$' -fuzz FuzzEventName -fuzztime $(FUZZTIME)

## gate-check: prove the gate's false-alarm and detection rates on this machine (N=5: ~50 min; not in CI)
gate-check:
	N=$(N) scripts/gate-check.sh

N ?= 5

## bench-driver: the driver's CPU per request against wrk's, REST GET and GraphQL query (~2 min; needs wrk; not in CI)
bench-driver:
	scripts/bench-driver.sh

## dashboards: regenerate grafana/dashboards/*.json from grafana/*.go
dashboards:
	$(GO) run ./grafana/gen

## stack: soakd + Prometheus + Pyroscope + Grafana (needs Docker); add --profile soak to run a suite in it
stack:
	docker compose -f grafana/docker-compose.yml up --build

clean:
	rm -rf bin
