#!/bin/sh
# Runs each script of bench/scripts/wrk_examples/ (candor's own equivalents of the wrk
# repository's examples) under wrk and under candor, side by side against one `candor serve`,
# and writes each tool's output to OUT/NAME.wrk.txt and OUT/NAME.candor.txt.
#   bench/wrk_examples.sh OUT [WRK]    (WRK: path of wrk, default: wrk on PATH)
# Closed loop, 2 threads, 4 connections, 2 s each; server pinned to cpu 0, clients to cpu 1.
set -eu
out=${1:?usage: bench/wrk_examples.sh OUT [WRK]}
wrk=${2:-wrk}
root=$(cd "$(dirname "$0")/.." && pwd)
candor=$root/target/release/candor
mkdir -p "$out"
taskset -c 0 "$candor" serve --listen 127.0.0.1:0 >"$out/serve.banner" &
server=$!
trap 'kill $server' EXIT
while ! grep -q http "$out/serve.banner" 2>/dev/null; do sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$out/serve.banner" | head -1)/
for script in "$root"/bench/scripts/wrk_examples/*.lua; do
    name=$(basename "$script" .lua)
    taskset -c 1 "$wrk" -t2 -c4 -d2s -s "$script" "$url" >"$out/$name.wrk.txt" 2>&1 || true
    taskset -c 1 "$candor" run -R max -t 2 -c 4 -d 2s -s "$script" "$url" >"$out/$name.candor.txt" 2>&1 || true
    echo "$name: wrk exit and candor exit written to $out"
done
