#!/usr/bin/env python3
"""WebSocket messages per CPU-second of the client: candor beside a documented baseline, same run.

k6 (the WebSocket client the issue names) is AGPL and not used here. Two documented baselines
stand in, each optional: `--go-client`, bench/ws_go_client built with gorilla/websocket (the Go
library k6's WebSocket modules are built on, without k6's JavaScript runtime on top, so a
stronger client than k6 itself), and `--python`, the `websockets` package from PyPI (asyncio)
driven by bench/ws_python_client.py. All load the testkit's echo server (`ws-echo`,
tokio-tungstenite), closed loop with CONNECTIONS connections x IN_FLIGHT messages for DURATION
seconds: `candor run -R max -t 1 -c C --streams S -d D --body MESSAGE ws://...` and the baselines
with the same C and S. The server is pinned to CPU 0, the clients to CPU 1; the tools alternate
(the order rotates every round). CPU = user + system time of the client process (getrusage);
messages = replies the client counts.

  (cd bench/ws_go_client && go build -o /work/wt/tools/bin/ws-go-client .)
  python3 -m venv /work/wt/tools/wsvenv && /work/wt/tools/wsvenv/bin/pip install websockets==17.4
  cargo build --release -p candor-cli -p candor-testkit --features candor-testkit/ws
  bench/ws.py --go-client /work/wt/tools/bin/ws-go-client --python /work/wt/tools/wsvenv/bin/python
              [--rounds 5] [--duration 5] [--connections 8] [--in-flight 16]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDOR = os.path.join(ROOT, "target", "release", "candor")
ECHO = os.path.join(ROOT, "target", "release", "ws-echo")
MESSAGE = '{"op":"echo","text":"a message of a few dozen bytes"}'


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_candor(pin, url, a, tmp):
    path = os.path.join(tmp, "out.json")
    cmd = pin + [CANDOR, "run", "-R", "max", "-t", "1", "-c", str(a.connections), "--streams",
                 str(a.in_flight), "-d", f"{a.duration}s", "--body", MESSAGE, "--quiet", "--json", path, url]
    before = child_cpu()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    cpu = child_cpu() - before
    with open(path) as f:
        r = json.load(f)["requests"]
    if r["failed"]:
        sys.exit(f"candor: {r['failed']} messages failed")
    return r["completed"], cpu


def run_go(pin, url, a):
    cmd = pin + [a.go_client, url, str(a.connections), str(a.in_flight), str(a.duration), MESSAGE]
    before = child_cpu()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return int(out.strip()), child_cpu() - before


def run_python(pin, url, a):
    cmd = pin + [a.python, os.path.join(ROOT, "bench", "ws_python_client.py"), url, str(a.connections),
                 str(a.in_flight), str(a.duration), MESSAGE]
    before = child_cpu()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return int(out.strip()), child_cpu() - before


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", help="a Python with the websockets package")
    ap.add_argument("--go-client", help="bench/ws_go_client built (gorilla/websocket)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=16)
    a = ap.parse_args()
    for path in (CANDOR, ECHO):
        if not os.path.exists(path):
            sys.exit(f"{path} missing: cargo build --release -p candor-cli -p candor-testkit --features candor-testkit/ws")
    pin_s = ["taskset", "-c", "0"] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else []
    pin_c = ["taskset", "-c", "1"] if pin_s else []
    tmp = tempfile.mkdtemp()
    server = subprocess.Popen(pin_s + [ECHO], stdout=subprocess.PIPE, text=True)
    url = f"ws://{server.stdout.readline().strip()}/"
    tools = [("candor", lambda: run_candor(pin_c, url, a, tmp))]
    if a.go_client:
        tools.append(("go-gorilla", lambda: run_go(pin_c, url, a)))
    if a.python:
        tools.append(("python-websockets", lambda: run_python(pin_c, url, a)))
    per_cpu = {name: [] for name, _ in tools}
    try:
        print(f"ws-echo on CPU 0, clients on CPU 1; {a.connections} connections x {a.in_flight} messages in flight, "
              f"one thread, {a.duration} s closed loop")
        for r in range(a.rounds):
            k = r % len(tools)
            order = tools[k:] + tools[:k]
            for name, run in order:
                n, cpu = run()
                per_cpu[name].append(n / cpu)
                print(f"round {r + 1}  {name:18} {n:9d} messages  {cpu:6.2f} CPU s  {n / cpu:10.0f} messages/CPU-s")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    ours = statistics.median(per_cpu["candor"])
    print("\nmedians (messages per CPU-second of the client process):")
    for name, _ in tools:
        m = statistics.median(per_cpu[name])
        print(f"  {name:18} {m:10.0f}  candor / {name}: {ours / m:5.2f}")


if __name__ == "__main__":
    main()
