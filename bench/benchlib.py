"""What the bench scripts share: the repository's paths, a child's CPU time, and starting a
server that prints its URL in its first line."""

import os
import resource
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REL = os.path.join(ROOT, "target", "release")


def child_cpu():
    """User + system CPU seconds of every child that has ended so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start(cmd, pin):
    """Starts `cmd` (pinned by the `pin` prefix); returns the process and the URL of its banner."""
    p = subprocess.Popen(pin + cmd, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    url = next((w.rstrip(",") for w in line.split() if "://" in w), None)
    if url is None:
        p.kill()
        sys.exit(f"no URL in banner of {cmd}: {line!r}")
    return p, url


def add_script_run_args(parser, rounds, seconds):
    """The flags of the benchmarks of a wrk script under `candor run` (issue 25): rounds, seconds
    per run, the open loop's rate, and the script (bench/scripts/dynamic_request.lua)."""
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--seconds", type=int, default=seconds)
    parser.add_argument("--rate", default="20k")
    parser.add_argument("--script", default=os.path.join(ROOT, "bench", "scripts", "dynamic_request.lua"))
