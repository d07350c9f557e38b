#!/usr/bin/env bash
# gate-check: proves the release gate's two rates on this machine (issue 9).
#   1. The default profile N times on one build; `soakd compare` of every pair: no fail expected.
#   2. `soakd run --arms rest,rest` N times: no fail expected (memory verdict included).
#   3. N runs with an injected CPU regression, each compared with a clean run: fail expected every time,
#      naming cpu_us_per_request.
#   4. The same with an injected allocation regression: fail expected, naming alloc_bytes_per_request.
#   5. `soakd ab` sessions (two builds in one session, rounds paired): N A/A sessions (one build on both
#      sides: no fail expected), N with the CPU regression on the new side and N with the allocation
#      regression (fail expected every time).
#   6. (PARTS=duet) `soakd ab` sequential and `soakd ab --duet` on the same build, side by side: N A/A
#      sessions and N each with GraphQL CPU +5 % and +10 % (CPU5_US, CPU10_US µs per request; auto, the
#      default: 5 % and 10 % of what the first A/A session measured, which needs KINDS to start with aa) and
#      allocation +5 % (ALLOC5_BYTES per request) on the new side, with the limits at 2 % (DUET_LIMIT), on a
#      quiet machine and again with a competing CPU load (a second process burning one core at nice 0,
#      started and stopped by this script); per session the verdict, the interval of GraphQL CPU per request
#      (the duet's per-second row, the sequential session's per-round row) and its half-width, and the
#      session's wall time. MODES="seq duet" picks the modes; DUET_LAYOUT (halves or shared) the duet's layout, DUET_PROCESSES (round or session) its processes
#      (default: compare.duet_layout). DUET_PROFILE (duet: gate's pair by duration, so that each round fills the duet's
#      5 s batches) is both modes' profile; KINDS and MACHINES pick a subset. Needs jq. About
#      4 × 2 × N × 11 minutes (N=1: ~1 h 30 min).
# All traffic stays on loopback. Parts 1-4 take about 4 × N × 2.5 minutes on 2 cores (N=5: ~50 min), part 5
# about 3 × N × 5 minutes (N=5: ~75 min); PARTS selects them.
# Usage: scripts/gate-check.sh [OUTDIR]   (env: N=5, CPU_US=25, ALLOC_BYTES=4096, PROFILE=quick, PARTS="runs ab",
#        AB_PROFILE=gate: the profile of the sessions; AB_CONFIG=FILE: the sessions' --config, e.g. a finer sampler.interval)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-5}
CPU_US=${CPU_US:-25}
ALLOC_BYTES=${ALLOC_BYTES:-4096}
PROFILE=${PROFILE:-quick}
PARTS=${PARTS:-runs ab}
AB_PROFILE=${AB_PROFILE:-gate}
case " $PARTS " in *" runs "*|*" ab "*|*" duet "*) ;; *) echo "PARTS must name runs, ab or duet (got '$PARTS')" >&2; exit 2 ;; esac
CPU5_US=${CPU5_US:-auto}
CPU10_US=${CPU10_US:-auto}
ALLOC5_BYTES=${ALLOC5_BYTES:-700}
DUET_LIMIT=${DUET_LIMIT:-2}
out=${1:-gate-check/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
go build -o bin/soakd .
bin=./bin/soakd

run() { # run NAME [soakd run args...]: exit 0/1/4 are verdicts; 2/3 stop the script
  local name=$1; shift
  local code=0
  "$bin" run --profile "$PROFILE" --out "$out/$name" --log-format json "$@" >"$out/$name.out" 2>"$out/$name.log" || code=$?
  case $code in 0|1|4) ;; *) echo "run $name exited $code; see $out/$name.log" >&2; exit 1 ;; esac
  grep -E '^verdict: ' "$out/$name.out" | tail -1 | awk '{print tolower($2)}'
}
compare() { # compare OLD NEW → verdict and the failing metrics
  local code=0
  "$bin" compare "$out/$1" "$out/$2" >"$out/compare-$1-$2.txt" 2>&1 || code=$?
  local v
  v=$(tail -1 "$out/compare-$1-$2.txt" | awk '{print $NF}')
  local why
  why=$(grep -E '^  - (FAIL|INCONCLUSIVE|NOT_MEASURED)' "$out/compare-$1-$2.txt" | awk '{print $2 $3"/"$4}' | tr '\n' ' ')
  echo "$v ${why}"
}

ab() { # ab NAME [soakd ab args...] → the paired comparison's verdict and its failing or open rows
  local name=$1; shift
  local code=0
  "$bin" ab --profile "$AB_PROFILE" ${AB_CONFIG:+--config "$AB_CONFIG"} --out "$out/$name" --log-format json "$@" >"$out/$name.out" 2>"$out/$name.log" || code=$?
  case $code in 0|1|4) ;; *) echo "ab $name exited $code; see $out/$name.log" >&2; exit 1 ;; esac
  local v why
  v=$(grep -E '^comparison ' "$out/$name.out" | tail -1 | awk '{print $NF}')
  why=$(grep -E '^  - (FAIL|INCONCLUSIVE|NOT_MEASURED)' "$out/$name.out" | awk '{print $2 $3"/"$4}' | tr '\n' ' ')
  echo "$v ${why}"
}

printf 'inject:\n  graphql_cpu_us_per_request: %d\n' "$CPU_US" >"$out/inject-cpu.yaml"
printf 'inject:\n  graphql_alloc_bytes_per_request: %d\n' "$ALLOC_BYTES" >"$out/inject-alloc.yaml"

# The +5 % and +10 % burns: given, or (auto, the default) 5 % and 10 % of GraphQL's CPU per request as the
# first A/A session of part 6 measured it on the old side, so that "+5 %" is 5 % of what this build costs on
# this machine (it was 100 µs a request when the script was written, 147 µs per side in a duet since).
write_cpu_injects() {
  printf 'inject:\n  graphql_cpu_us_per_request: %d\n' "$CPU5_US" >"$out/inject-cpu5.yaml"
  printf 'inject:\n  graphql_cpu_us_per_request: %d\n' "$CPU10_US" >"$out/inject-cpu10.yaml"
}
[[ $CPU5_US != auto && $CPU10_US != auto ]] && write_cpu_injects
calibrate() { # calibrate NAME: set the auto burns from A/A session NAME's old GraphQL CPU per request (µs)
  local v
  v=$(jq -r '[.rows[] | select(.phase == "graphql-load" and .metric == "cpu_us_per_request")][0].old // empty' "$out/$1/compare.json")
  [[ -n $v ]] || { echo "cannot calibrate the CPU burns: $1 has no GraphQL CPU per request; set CPU5_US and CPU10_US" >&2; exit 1; }
  [[ $CPU5_US == auto ]] && CPU5_US=$(awk -v v="$v" 'BEGIN { printf "%d", v * 0.05 + 0.5 }')
  [[ $CPU10_US == auto ]] && CPU10_US=$(awk -v v="$v" 'BEGIN { printf "%d", v * 0.10 + 0.5 }')
  write_cpu_injects
  echo "(CPU burns calibrated on $1: GraphQL $(awk -v v="$v" 'BEGIN { printf "%.1f", v }') µs a request, so +5 % = $CPU5_US µs, +10 % = $CPU10_US µs)" >>"$out/duet.md"
}
printf 'inject:\n  graphql_alloc_bytes_per_request: %d\n' "$ALLOC5_BYTES" >"$out/inject-alloc5.yaml"
printf 'compare:\n  cpu_per_request_increase_percent: %s\n  alloc_per_request_increase_percent: %s\n' "$DUET_LIMIT" "$DUET_LIMIT" >"$out/limits.yaml"

# duet_ab NAME [soakd ab args...] → verdict, the GraphQL CPU-per-request interval (percent), its
# half-width and the session's seconds, tab-separated.
duet_ab() {
  local name=$1; shift
  local code=0 t0 t1
  t0=$(date +%s)
  "$bin" ab --profile "${DUET_PROFILE:-duet}" --config "$out/limits.yaml" --out "$out/$name" --log-format json "$@" >"$out/$name.out" 2>"$out/$name.log" || code=$?
  t1=$(date +%s)
  case $code in 0|1|4) ;; *) echo "ab $name exited $code; see $out/$name.log" >&2; exit 1 ;; esac
  local v iv
  v=$(grep -E '^comparison ' "$out/$name.out" | tail -1 | awk '{print $NF}')
  # The duet's gated row is cpu_us_per_request_seconds; a sequential session's is cpu_us_per_request.
  iv=$(jq -r '[.rows[] | select(.phase == "graphql-load" and (.metric == "cpu_us_per_request_seconds" or .metric == "cpu_us_per_request") and .interval != null)]
      | (map(select(.metric == "cpu_us_per_request_seconds")) + map(select(.metric == "cpu_us_per_request")))[0]
      | if . == null then "not measured\t-" else "\(.interval.center * 100 | round / 100) [\(.interval.lo * 100 | round / 100), \(.interval.hi * 100 | round / 100)]\t\((.interval.hi - .interval.lo) / 2 * 100 | round / 100)" end' "$out/$name/compare.json")
  local first
  first=$(jq -r 'if .ab.started_first then "new" else "old" end' "$out/$name/new/report.json")
  printf '%s\t%s\t%s\t%s\n' "$v" "$iv" "$((t1 - t0))" "$first"
}

table="$out/table.md"
{
  echo "# gate-check $(date -u +%FT%TZ) on $(nproc) cores, N=$N, parts: $PARTS (runs: profile $PROFILE; ab sessions: profile $AB_PROFILE)"
  echo
  echo "| experiment | item | verdict | failing or open rows |"
  echo "|---|---|---|---|"
} >"$table"
row() { echo "| $1 | $2 | $3 | $4 |" | tee -a "$table"; }

if [[ " $PARTS " == *" runs "* ]]; then
# Interleave the kinds of run so a drift of the machine lands on all of them.
for i in $(seq 1 "$N"); do
  v=$(run "same-$i"); row "same build, run" "same-$i" "$v" "(own KPI verdict)"
  v=$(run "self-$i" --arms rest,rest); row "rest,rest self-check" "self-$i" "$v" "$(grep -E '^  - ' "$out/self-$i.out" | tr '\n' ' ')"
  v=$(run "cpu-$i" --config "$out/inject-cpu.yaml"); row "CPU +${CPU_US} µs/req, run" "cpu-$i" "$v" "(own KPI verdict)"
  v=$(run "alloc-$i" --config "$out/inject-alloc.yaml"); row "alloc +${ALLOC_BYTES} B/req, run" "alloc-$i" "$v" "(own KPI verdict)"
done
for i in $(seq 1 "$N"); do
  for j in $(seq $((i + 1)) "$N"); do
    set -- $(compare "same-$i" "same-$j"); row "same build, compare" "same-$i → same-$j" "$1" "${*:2}"
  done
done
for i in $(seq 1 "$N"); do
  set -- $(compare "same-$i" "cpu-$i"); row "CPU injected, compare" "same-$i → cpu-$i" "$1" "${*:2}"
  set -- $(compare "same-$i" "alloc-$i"); row "alloc injected, compare" "same-$i → alloc-$i" "$1" "${*:2}"
done
fi
if [[ " $PARTS " == *" ab "* ]]; then
for i in $(seq 1 "$N"); do
  set -- $(ab "aa-$i"); row "A/A session (soakd ab)" "aa-$i" "$1" "${*:2}"
  set -- $(ab "abcpu-$i" --new "$out/inject-cpu.yaml"); row "CPU injected, A/B session" "abcpu-$i" "$1" "${*:2}"
  set -- $(ab "aballoc-$i" --new "$out/inject-alloc.yaml"); row "alloc injected, A/B session" "aballoc-$i" "$1" "${*:2}"
done
fi
if [[ " $PARTS " == *" duet "* ]]; then
  command -v jq >/dev/null || { echo "PARTS=duet needs jq (apt-get install -y jq)" >&2; exit 2; }
  duet="$out/duet.md"
  {
    echo "# duet vs sequential, $(date -u +%FT%TZ), $(nproc) cores, N=$N, profile ${DUET_PROFILE:-duet}, limits +${DUET_LIMIT} %"
    echo
    echo "| machine | session | sequential verdict | sequential CPU/req change [95 %] | ± | s | duet verdict | duet CPU/req change [95 %] | ± | s | duet: started first |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  } >"$duet"
  burner=""
  stop_burner() { if [[ -n $burner ]]; then kill "$burner" 2>/dev/null || true; wait "$burner" 2>/dev/null || true; burner=""; fi; }
  trap stop_burner EXIT
  for machine in ${MACHINES:-quiet competing}; do
    if [[ $machine == competing ]]; then
      nice -n 0 bash -c 'while :; do :; done' &
      burner=$!
    fi
    for i in $(seq 1 "$N"); do
      for kind in ${KINDS:-aa cpu5 cpu10 alloc5}; do
        if [[ $kind == cpu5 || $kind == cpu10 ]] && [[ $CPU5_US == auto || $CPU10_US == auto ]]; then
          echo "KINDS must start with aa when CPU5_US or CPU10_US is auto (the A/A session calibrates the burns)" >&2; exit 2
        fi
        args=()
        [[ $kind != aa ]] && args=(--new "$out/inject-$kind.yaml")
        sv=- siv=- sh=- ss=- sf=- dv=- div=- dh=- ds=- df=-
        if [[ " ${MODES:-seq duet} " == *" seq "* ]]; then
          IFS=$'\t' read -r sv siv sh ss sf < <(duet_ab "seq-$machine-$kind-$i" "${args[@]}")
        fi
        if [[ " ${MODES:-seq duet} " == *" duet "* ]]; then
          IFS=$'\t' read -r dv div dh ds df < <(duet_ab "duet-$machine-$kind-$i" --duet ${DUET_LAYOUT:+--duet-layout "$DUET_LAYOUT"} ${DUET_PROCESSES:+--duet-processes "$DUET_PROCESSES"} "${args[@]}")
        fi
        echo "| $machine | $kind-$i | $sv | $siv | $sh | $ss | $dv | $div | $dh | $ds | $df |" | tee -a "$duet"
        if [[ $kind == aa && ( $CPU5_US == auto || $CPU10_US == auto ) ]]; then
          if [[ " ${MODES:-seq duet} " == *" duet "* ]]; then calibrate "duet-$machine-$kind-$i"; else calibrate "seq-$machine-$kind-$i"; fi
        fi
      done
    done
    stop_burner
  done
  {
    echo
    for m in quiet competing; do
      for mode in sequential duet; do
        col=$([[ $mode == sequential ]] && echo 5 || echo 9)
        vcol=$([[ $mode == sequential ]] && echo 3 || echo 7)
        ccol=$([[ $mode == sequential ]] && echo 4 || echo 8)
        echo "- $m, $mode: A/A centres $(awk -F' \\| ' -v m="$m" -v c="$ccol" '$1 == "| "m && $2 ~ /^aa-/ && $c != "-" {split($c, a, " "); print a[1]}' "$duet" | awk '{s += $1; ss += $1 * $1; n++} END {if (n > 1) printf "mean %+.2f %%, sd %.2f %% over %d sessions (the spread between sessions, which no interval within one sees)", s / n, sqrt((ss - s * s / n) / (n - 1)), n; else print "fewer than 2 sessions"}')"
        echo "- $m, $mode: A/A fails $(awk -F' \\| ' -v m="$m" -v c="$vcol" '$1 == "| "m && $2 ~ /^aa-/ && $c == "FAIL"' "$duet" | wc -l) of $N; +5 % CPU fails $(awk -F' \\| ' -v m="$m" -v c="$vcol" '$1 == "| "m && $2 ~ /^cpu5-/ && $c == "FAIL"' "$duet" | wc -l) of $N; median ± of CPU/req $(awk -F' \\| ' -v m="$m" -v c="$col" '$1 == "| "m && $c != "-" {print $c}' "$duet" | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)] " %"; else print "none"}')"
      done
    done
  } | tee -a "$duet"
fi
{
  echo
  echo "Summary:"
  if [[ " $PARTS " == *" runs "* ]]; then
    echo "- same build, compare: $(grep -c '| same build, compare | .* | FAIL |' "$table") fail of $((N * (N - 1) / 2)) (want 0)"
    echo "- rest,rest self-check: $(grep -c '| rest,rest self-check | .* | fail |' "$table") fail of $N (want 0)"
    echo "- CPU injected, compare: $(grep -cE '\| CPU injected, compare \| .* \| FAIL \| .*FAIL:graphql-load/(cpu_us_per_request|cpu_per_request_vs_control)' "$table") fail naming graphql-load's cpu_us_per_request or cpu_per_request_vs_control of $N (want $N)"
    echo "- alloc injected, compare: $(grep -c '| alloc injected, compare | .* | FAIL | .*alloc_bytes_per_request' "$table") fail naming alloc_bytes_per_request of $N (want $N)"
  fi
  if [[ " $PARTS " == *" ab "* ]]; then
    echo "- A/A sessions: $(grep -c '| A/A session (soakd ab) | .* | FAIL |' "$table") fail of $N (want 0)"
    echo "- CPU injected, A/B sessions: $(grep -cE '\| CPU injected, A/B session \| .* \| FAIL \| .*FAIL:graphql-load/(cpu_us_per_request|cpu_per_request_vs_control)' "$table") fail naming graphql-load's CPU of $N (want $N)"
    echo "- alloc injected, A/B sessions: $(grep -c '| alloc injected, A/B session | .* | FAIL | .*alloc_bytes_per_request' "$table") fail naming alloc_bytes_per_request of $N (want $N)"
  fi
} | tee -a "$table"
