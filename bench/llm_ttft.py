#!/usr/bin/env python3
"""TTFT under a stall, candor beside an asyncio client that times from the actual send (as the
Python LLM benchmarks do), against the same `candor serve --llm` whose truth is known.

Starts `candor serve --llm --ttft 50ms --itl 10ms --output-tokens 16 --stall-every 2s
--stall-for 500ms` pinned to cpu 0, then, pinned to cpu 1, one after another against it:
  * candor run --llm openai -R RATE --arrival poisson -c 64, then -c 4 (ttft from the intended
    send, and its twin from the actual send)
  * bench/llm_asyncio.py --rate RATE --connections 64, then 4 (a bounded pool, as those tools
    keep one)
With 64 connections no request waits for one and the truth is the formula; with 4 the arrivals
of a stall queue for a connection, which the intended-send TTFT counts and the others do not.
and prints TTFT p50/p90/p99 of each beside the truth of docs/truth.md (T + S(1-(1-q)/f)).

Usage: bench/llm_ttft.py [--candor target/release/candor] [--rate 20] [--duration 40]
"""
import argparse, json, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def truth(q, t=50.0, s=500.0, f=0.25):
    return t if q <= 1 - f else t + s * (1 - (1 - q) / f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candor", default=os.path.join(ROOT, "target", "release", "candor"))
    ap.add_argument("--rate", default="20")
    ap.add_argument("--duration", type=int, default=40)
    a = ap.parse_args()
    server = subprocess.Popen(["taskset", "-c", "0", a.candor, "serve", "--llm", "--listen", "127.0.0.1:0",
                               "--ttft", "50ms", "--itl", "10ms", "--output-tokens", "16",
                               "--stall-every", "2s", "--stall-for", "500ms"], stdout=subprocess.PIPE, text=True)
    url = re.search(r"http://\S+", server.stdout.readline()).group(0).rstrip(",")
    rows = [("truth (docs/truth.md)", [truth(q) for q in (0.5, 0.9, 0.99)], "")]
    try:
        for conns in ("64", "4"):
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "r.json")
                cmd = ["taskset", "-c", "1", a.candor, "run", "--llm", "openai", "--output-tokens", "16",
                       "-R", a.rate, "--arrival", "poisson", "-c", conns, "-t", "1", "-d", f"{a.duration}s",
                       "-T", "10s", "-q", "--json", out, url]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                v = json.load(open(out))
                for m, label in (("ttft", "ttft (intended send)"), ("ttft_service", "ttft (sent)")):
                    ps = {p["percentile"]: p["value_ns"] / 1e6 for p in v[m]["percentiles"]}
                    rows.append((f"candor -c {conns}, {label}", [ps[50.0], ps[90.0], ps[99.0]],
                                 " ".join(cmd[3:]).replace(out, "FILE")))
        for conns in ("64", "4"):
            cmd = ["taskset", "-c", "1", sys.executable, os.path.join(ROOT, "bench", "llm_asyncio.py"), url,
                   "--rate", a.rate, "--duration", str(a.duration), "--connections", conns]
            text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            got = [float(x) for x in re.findall(r"p\d+ ([\d.]+) ms", text)]
            rows.append((f"llm_asyncio.py, {conns} connections", got, " ".join(cmd[3:])))
    finally:
        server.terminate()
        server.wait()
    print(f"server: candor serve --llm --ttft 50ms --itl 10ms --output-tokens 16 --stall-every 2s --stall-for 500ms")
    print(f"{'TTFT (ms)':34} {'p50':>8} {'p90':>8} {'p99':>8}")
    for label, v, _ in rows:
        print(f"{label:34} " + " ".join(f"{x:8.1f}" for x in v))
    for label, _, cmd in rows[1:]:
        print(f"  {label}: {cmd}")


if __name__ == "__main__":
    main()
