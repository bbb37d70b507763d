#!/usr/bin/env python3
"""guidellm and candor side by side on one known-truth LLM server, requests in flight capped (issue 40).

Starts `candor serve --llm --ttft 50ms --itl 10ms --output-tokens 20 --stall-every 5s --stall-for 1s`
pinned to cpu 1 and, pinned to cpu 0, in alternating order over ROUNDS rounds (a fresh server each
round, so each run starts at its own stall phase):
  * guidellm run --profile kind=constant,rate=R,max_concurrency=C --constraint kind=max_requests,count=N
  * candor run --llm openai -R R --max-concurrency C -n N --output-tokens 20
and prints each tool's TTFT p50/p90/p99, its token-gap measures as it defines them, its CPU per
request (user+system of the child and every descendant it reaped, from wait4) and its peak memory,
beside the truth of docs/truth.md ("LLM TTFT with requests in flight capped"), computed for each
run from that run's own intended send times and the server's stall phase.

What is read from guidellm's JSON (`--output kind=json`), per successful request in
`benchmarks[0].requests.successful[]`:
  * `time_to_first_token_ms`: guidellm's TTFT, first token minus `info.timings.request_start`
    (its actual send);
  * `info.timings.targeted_start`: the send time its own schedule intended; TTFT from it is
    `first_token_iteration - targeted_start` (computed here, guidellm does not report it);
  * `inter_token_latency_ms`: (last token - first token) / (tokens - 1) of one request, i.e.
    vLLM's TPOT (a request's mean gap, so a 1 s gap inside one stream is spread over 19);
  * `time_per_output_token_ms`: (last token - request_start) / tokens, TTFT included.
and `benchmarks[0].metrics.time_to_first_token_ms.successful.percentiles` (p50/p90/p99 exactly as
guidellm prints them). candor's figures are its results JSON: `ttft` (from the intended send),
`ttft_service` (from the actual send), `tpot` (vLLM's TPOT) and `itl` (every gap), percentiles
from its HdrHistograms.

Usage: bench/llm_guidellm.py [--candor target/release/candor] [--guidellm PATH] [--rounds 3]
       [--requests 250] [--rate 10] [--max-concurrency 4]
guidellm is a peer installed by name (`pip install guidellm==0.8.1` into a venv outside the
repository); without it the script says so and exits 0 having run nothing.
"""
import argparse, heapq, json, os, shutil, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T, I, TOKENS, P, S = 0.050, 0.010, 20, 5.0, 1.0
SERVER = ["serve", "--llm", "--listen", "127.0.0.1:0", "--ttft", "50ms", "--itl", "10ms",
          "--output-tokens", str(TOKENS), "--stall-every", "5s", "--stall-for", "1s"]
QS = (50.0, 90.0, 99.0)


def pct(xs, q):
    """Nearest-rank percentile (the smallest value with at least q% of the values at or below it)."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, int(-(-q * len(xs) // 100)) - 1))
    return xs[k]


def held(u, origin):
    """When a write due at u leaves a server started at `origin`: at u, or at the end of the stall
    window [k*P + (P-S), (k+1)*P) it falls in (docs/truth.md)."""
    phase = (u - origin) % P
    return u - phase + P if phase >= P - S else u


def truth(intended, origin, cap):
    """Every measure of the known-truth server for these intended send times with at most `cap`
    requests in flight, first come first sent (docs/truth.md): per request ttft (from the intended
    send), ttft from the actual send, TPOT (vLLM's), guidellm's TPOT (TTFT included), and every gap."""
    free = [float("-inf")] * cap
    out = {"ttft": [], "ttft_sent": [], "tpot": [], "tpot_incl_ttft": [], "itl": []}
    for t in sorted(intended):
        send = max(t, heapq.heappop(free))
        toks = [held(send + T + k * I, origin) for k in range(TOKENS)]
        heapq.heappush(free, toks[-1])
        out["ttft"].append(toks[0] - t)
        out["ttft_sent"].append(toks[0] - send)
        out["tpot"].append((toks[-1] - toks[0]) / (TOKENS - 1))
        out["tpot_incl_ttft"].append((toks[-1] - send) / TOKENS)
        out["itl"].extend(b - a for a, b in zip(toks, toks[1:]))
    return {k: [pct([x * 1e3 for x in v], q) for q in QS] for k, v in out.items()}


def tree_rss_kb(root):
    """Resident memory (kB) of `root` and all its descendants now, from /proc (shared pages count
    once per process, as `ps` adds them)."""
    kids, rss = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/status") as f:
                rss[int(pid)] = next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
            kids.setdefault(ppid, []).append(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(kids.get(p, []))
    return total


def measured_run(cmd):
    """Runs cmd; returns (CPU seconds of it and its reaped descendants, its largest single-process
    peak RSS in MB from wait4, the peak of the whole tree's summed RSS in MB sampled every 100 ms)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak, done = [0], threading.Event()

    def sample():
        while not done.wait(0.1):
            peak[0] = max(peak[0], tree_rss_kb(p.pid))
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    th.join()
    if p.returncode != 0:
        sys.exit(f"{cmd[2]} failed ({p.returncode}): {err.strip()[-2000:]}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, peak[0] / 1024


def start_server(candor):
    s = subprocess.Popen(["taskset", "-c", "1", candor] + SERVER, stdout=subprocess.PIPE, text=True)
    line = s.stdout.readline()
    origin = time.time()  # the stall clock started just before the banner: this is a few ms late at most
    url = next((w.rstrip(",") for w in line.split() if "://" in w), None)
    if url is None:
        s.kill()
        sys.exit(f"no URL in candor serve's banner: {line!r}")
    return s, url, origin


def run_guidellm(a, url, d):
    prompts = os.path.join(d, "prompts.jsonl")
    with open(prompts, "w") as f:
        f.writelines(json.dumps({"prompt": f"hello there candor {i}"}) + "\n" for i in range(a.requests))
    out = os.path.join(d, "guidellm.json")
    cmd = ["taskset", "-c", "0", a.guidellm, "run",
           "--backend", f"kind=openai_http,target={url},model=m,validate_backend=false",
           "--profile", f"kind=constant,rate={a.rate},max_concurrency={a.max_concurrency}",
           "--constraint", f"kind=max_requests,count={a.requests}",
           "--data", f"kind=json_file,path={prompts}", "--output", f"kind=json,path={out}",
           "--disable-console"]
    cpu, maxrss, tree = measured_run(cmd)
    b = json.load(open(out))["benchmarks"][0]
    ok = b["requests"]["successful"]
    tim = [r["info"]["timings"] for r in ok]
    rep = b["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]
    row = {
        "ttft (its report)": [rep[k] for k in ("p50", "p90", "p99")],
        "ttft (its request list)": [pct([r["time_to_first_token_ms"] for r in ok], q) for q in QS],
        "ttft from targeted_start": [pct([(t["first_token_iteration"] - t["targeted_start"]) * 1e3
                                          for t in tim], q) for q in QS],
        "its 'ITL' (= vLLM TPOT)": [pct([r["inter_token_latency_ms"] for r in ok], q) for q in QS],
        "its 'TPOT' (TTFT incl.)": [pct([r["time_per_output_token_ms"] for r in ok], q) for q in QS],
    }
    n = len(b["requests"]["errored"]) + len(b["requests"]["incomplete"])
    return row, [t["targeted_start"] for t in tim], len(ok), n, cpu, maxrss, tree, cmd


def run_candor(a, url, d):
    out = os.path.join(d, "candor.json")
    cmd = ["taskset", "-c", "0", a.candor, "run", "--llm", "openai", "--output-tokens", str(TOKENS),
           "-R", str(a.rate), "--max-concurrency", str(a.max_concurrency), "-n", str(a.requests),
           "-T", "20s", "-q", "--json", out, url]
    cpu, maxrss, tree = measured_run(cmd)
    v = json.load(open(out))
    ps = {m: {p["percentile"]: p["value_ns"] / 1e6 for p in v[m]["percentiles"]}
          for m in ("ttft", "ttft_service", "tpot", "itl")}
    row = {
        "ttft (intended send)": [ps["ttft"][q] for q in QS],
        "ttft (actual send)": [ps["ttft_service"][q] for q in QS],
        "tpot (vLLM's)": [ps["tpot"][q] for q in QS],
        "itl (every gap)": [ps["itl"][q] for q in QS],
    }
    req = v["requests"]
    t0 = v["start_time_unix_s"]
    intended = [t0 + i / float(a.rate) for i in range(a.requests)]
    return row, intended, req["completed"], req["intended"] - req["completed"], cpu, maxrss, tree, cmd


TRUTH_OF = {"ttft (its report)": "ttft_sent", "ttft (its request list)": "ttft_sent",
            "ttft from targeted_start": "ttft", "its 'ITL' (= vLLM TPOT)": "tpot",
            "its 'TPOT' (TTFT incl.)": "tpot_incl_ttft", "ttft (intended send)": "ttft",
            "ttft (actual send)": "ttft_sent", "tpot (vLLM's)": "tpot", "itl (every gap)": "itl"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candor", default=os.path.join(ROOT, "target", "release", "candor"))
    ap.add_argument("--guidellm", default=shutil.which("guidellm"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=250)
    ap.add_argument("--rate", type=int, default=10)
    ap.add_argument("--max-concurrency", type=int, default=4)
    a = ap.parse_args()
    if not a.guidellm or not os.access(a.guidellm, os.X_OK):
        print("skipped: guidellm not found (pip install guidellm==0.8.1 into a venv, then --guidellm VENV/bin/guidellm)")
        return
    runs = {"guidellm": run_guidellm, "candor": run_candor}
    got, cmds = {name: [] for name in runs}, {}
    for rnd in range(a.rounds):
        order = list(runs) if rnd % 2 == 0 else list(runs)[::-1]
        for name in order:
            server, url, origin = start_server(a.candor)
            try:
                with tempfile.TemporaryDirectory() as d:
                    row, intended, ok, bad, cpu, maxrss, tree, cmd = runs[name](a, url, d)
            finally:
                server.terminate()
                server.wait()
            tr = truth(intended, origin, a.max_concurrency)
            got[name].append((row, tr, ok, bad, cpu, maxrss, tree))
            cmds[name] = " ".join(cmd[3:]).replace(url, "URL").replace(d, "TMP")
            print(f"round {rnd + 1} {name}: {ok} completed, {bad} not; CPU {cpu * 1e3 / max(ok, 1):.2f} ms/request, "
                  f"peak RSS {maxrss:.0f} MB (largest process), {tree:.0f} MB (process tree, sampled)", flush=True)
            for label, v in row.items():
                t = tr[TRUTH_OF[label]]
                print(f"  {label:26} " + " ".join(f"{x:9.1f}" for x in v) + "   truth " +
                      " ".join(f"{x:8.1f}" for x in t), flush=True)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print(f"\nserver: candor {' '.join(SERVER)}; medians over {a.rounds} rounds (truth: the median of each run's own)")
    print(f"{'(ms)':37} {'p50':>9} {'p90':>9} {'p99':>9} | {'truth p50':>9} {'p90':>9} {'p99':>9}")
    for name, rs in got.items():
        for label in rs[0][0]:
            v = [med([r[0][label][i] for r in rs]) for i in range(3)]
            t = [med([r[1][TRUTH_OF[label]][i] for r in rs]) for i in range(3)]
            print(f"{name + ' ' + label:37} " + " ".join(f"{x:9.1f}" for x in v) + " | " +
                  " ".join(f"{x:9.1f}" for x in t))
    for name, rs in got.items():
        print(f"{name}: CPU per request {med([r[4] * 1e3 / max(r[2], 1) for r in rs]):.2f} ms, "
              f"peak RSS {med([r[5] for r in rs]):.0f} MB (largest process) / {med([r[6] for r in rs]):.0f} MB "
              f"(tree), completed {med([r[2] for r in rs])} of {a.requests}")
    for name, c in cmds.items():
        print(f"  {name}: {c}")


if __name__ == "__main__":
    main()
