#!/usr/bin/env bash
# Side by side: jbench device qualify's fdatasync figures against fio's own measurement
# of the same pattern (etcd's recipe: 2300-byte appends, fdatasync after each, 22 MiB),
# in the same directory, alternated so that both see the same moments of a noisy disk.
# Prints each pair's p50 and p99 and their ratio, then the median of the per-pair
# ratios, which one burst on the host cannot move the way it moves a single pair.
#
# usage: scripts/fdatasync-vs-fio.sh DIR [PAIRS] [JBENCH]
#   DIR     a directory on the device to measure (a scratch file is made and removed)
#   PAIRS   how many jbench/fio pairs (default 10); the order flips every pair
#   JBENCH  the jbench binary (default: target/release/jbench)
set -euo pipefail
dir=${1:?usage: $0 DIR [PAIRS] [JBENCH]}
pairs=${2:-10}
jbench=${3:-target/release/jbench}
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is not installed (apt-get install jq)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out" "$dir"/jbench-fio-etcd.*' EXIT

run_jbench() {
    "$jbench" device qualify "$dir" --only fdatasync --json >"$out/j.json" 2>"$out/j.err" ||
        { cat "$out/j.err" >&2; exit 1; }
    jq -r '[.fdatasync.p50_us, .fdatasync.p99_us, .fdatasync.count] | @tsv' "$out/j.json"
}
run_fio() {
    fio --name=etcd --directory="$dir" --filename="jbench-fio-etcd.$$" --rw=write \
        --ioengine=sync --fdatasync=1 --bs=2300 --size=22m --output-format=json >"$out/f.json"
    rm -f "$dir/jbench-fio-etcd.$$"
    jq -r '.jobs[0].sync.lat_ns | [.percentile["50.000000"]/1000, .percentile["99.000000"]/1000, .N] | @tsv' "$out/f.json"
}

printf '%-5s %12s %12s %12s %12s %8s %8s\n' pair jb_p50_us fio_p50_us jb_p99_us fio_p99_us r_p50 r_p99
for i in $(seq 1 "$pairs"); do
    if (( i % 2 )); then j=$(run_jbench); f=$(run_fio); else f=$(run_fio); j=$(run_jbench); fi
    read -r jp50 jp99 _ <<<"$j"
    read -r fp50 fp99 _ <<<"$f"
    awk -v i="$i" -v a="$jp50" -v b="$fp50" -v c="$jp99" -v d="$fp99" 'BEGIN {
        printf "%-5s %12.1f %12.1f %12.1f %12.1f %8.3f %8.3f\n", i, a, b, c, d, a/b, c/d }'
done | tee "$out/pairs"
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median of per-pair ratios (jbench/fio) over $pairs pairs:" \
    "p50 $(awk '{ print $6 }' "$out/pairs" | median)," \
    "p99 $(awk '{ print $7 }' "$out/pairs" | median)"
echo "median p99: jbench $(awk '{ print $4 }' "$out/pairs" | median) µs," \
    "fio $(awk '{ print $5 }' "$out/pairs" | median) µs"
