#!/usr/bin/env bash
# scripts/sim-identical.sh BASE NEW: runs the outputs of 'baton sim' and
# 'baton explore' that a change meant only to make them cheaper must leave
# alone, from two baton binaries, and compares them byte for byte.
#
# Covered: 2,000 default seeds, --json, --prefer on, --shares,
# --supervisor-records, --faults hostile, --sessions on and off, --balance
# on, 1,500 seeds from seed 100,000, 13 single-seed traces, every mutation
# 'sim --mutate list' names (300 seeds each), and 'baton explore' (every
# configuration: states, edges, depth). Timings are cut before comparing
# (seeds/s, elapsed seconds, states/s). Prints the first lines of every
# difference; exits 0 when all are identical, 1 otherwise. Outputs stay in
# a temporary directory it names. Several minutes on two cores.
#
# Build the two binaries from clean trees, for example:
#   git worktree add /tmp/base main && (cd /tmp/base && go build -o /tmp/baton-base ./cmd/baton)
#   go build -o /tmp/baton-new ./cmd/baton
#   scripts/sim-identical.sh /tmp/baton-base /tmp/baton-new
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: scripts/sim-identical.sh BASE NEW (two baton binaries)" >&2
  exit 2
fi
base=$1 new=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/sim-identical.XXXXXX")
mkdir -p "$dir/base" "$dir/new"

# strip cuts what measures time, not behaviour.
strip() {
  sed -E 's/"elapsed_seconds": ?[0-9.e+-]+,?//; s/[0-9]+\.[0-9]+s\b//g; s/; [0-9.]+ seeds\/s//;
    s/"seeds_per_second": ?[0-9.e+-]+,?//; s/[0-9.]+ ?(states|edges)\/s//g; s/in [0-9.]+(ms|s|m[0-9.]+s)//g'
}

# run NAME ARGS...: both binaries, side by side, with their exit codes.
run() {
  local name=$1
  shift
  (
    "$base" "$@" 2>&1
    echo "exit $?"
  ) | strip >"$dir/base/$name" &
  (
    "$new" "$@" 2>&1
    echo "exit $?"
  ) | strip >"$dir/new/$name" &
  wait
}

run default sim --seeds 2000
run json sim --seeds 1000 --json
run prefer sim --seeds 800 --prefer on
run shares sim --seeds 800 --shares
run supervisor-records sim --seeds 800 --supervisor-records
run hostile sim --seeds 600 --faults hostile
run sessions-on sim --seeds 600 --sessions on
run sessions-off sim --seeds 600 --sessions off
run balance sim --seeds 600 --balance on
run elsewhere sim --seed 100000 --seeds 1500
for s in 1 7 13 40 99 211 500 1234 2024 4242 9001 12345 31337; do
  run "trace-$s" sim --seed "$s" --seeds 1 --trace
done
mutations=$("$base" sim --mutate list 2>&1 | sed -E 's/.*want //; s/,? or /, /; s/, /\n/g')
if [ -z "$mutations" ]; then
  echo "sim-identical: $base sim --mutate list named no mutation" >&2
  exit 1
fi
for m in $mutations; do
  run "mutate-$m" sim --seeds 300 --mutate "$m"
done
run explore explore

fail=0
for f in "$dir"/base/*; do
  n=$(basename "$f")
  if ! cmp -s "$f" "$dir/new/$n"; then
    echo "DIFFERS: $n"
    diff "$f" "$dir/new/$n" | head -5
    fail=1
  fi
done
echo "compared $(ls "$dir/base" | wc -l) outputs in $dir: $([ $fail = 0 ] && echo all identical || echo DIFFERENCES)"
exit $fail
