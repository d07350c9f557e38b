#!/usr/bin/env bash
# bench-driver: the load driver's CPU per request against wrk's (issue 12).
# Starts soakd's target pinned to CPU 0, then for REST GET and the GraphQL query runs three alternating
# rounds of `soakd drive` and wrk (32 connections, no think time, 8 s each) pinned to CPU 1, and prints
# a markdown table of CPU per request (user+system CPU from wait4 over the requests completed) and the
# driver's ratio to wrk in each round. Loopback only. Takes about 2 minutes; needs 2 CPUs, taskset and wrk.
# Usage: scripts/bench-driver.sh [benchdriver flags: -rounds 3 -duration 8s -users 32 -ops rest-get,graphql-query]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v wrk >/dev/null; then
  echo "bench-driver needs wrk: apt-get install wrk" >&2
  exit 2
fi
if ! command -v taskset >/dev/null; then
  echo "bench-driver needs taskset: apt-get install util-linux" >&2
  exit 2
fi
if [ "$(nproc --all)" -lt 2 ]; then
  echo "bench-driver needs 2 CPUs (target on CPU 0, load generators on CPU 1)" >&2
  exit 2
fi
go build -o bin/soakd .
go build -o bin/benchdriver ./scripts/benchdriver
exec bin/benchdriver -soakd bin/soakd "$@"
