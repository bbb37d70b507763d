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
