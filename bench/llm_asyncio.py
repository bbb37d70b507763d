#!/usr/bin/env python3
"""An LLM serving benchmark client as the Python ones are built (vLLM's `bench serve`,
genai-perf, LLMPerf): an asyncio event loop, Poisson arrivals, a bounded pool of keep-alive
connections, and each request timed from when it was actually sent -- after it got a
connection. When the server stalls, arrivals queue for a connection, and that wait is never
counted: the comparison candor's TTFT (from the intended arrival) is measured against.

Usage: llm_asyncio.py http://127.0.0.1:PORT --rate 20 --duration 15 --connections 10
Prints TTFT p50/p90/p99 in ms (from the actual send) and the number of requests.
Standard library only.
"""
import argparse, asyncio, json, random, time
from urllib.parse import urlparse


async def one(pool, host, body, ttfts):
    reader, writer = await pool.get()            # waits for a free connection: not timed
    try:
        t0 = time.perf_counter()                  # the actual send
        writer.write(f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        while (await reader.readline()) not in (b"\r\n", b""):
            pass                                  # the response head
        first = None
        while True:                               # chunked SSE: one event per chunk
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                break
            event = await reader.readexactly(size + 2)
            if first is None and b'"content":"' in event and b'"content":""' not in event:
                first = time.perf_counter()
        if first is not None:
            ttfts.append((first - t0) * 1000)
    finally:
        pool.put_nowait((reader, writer))


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--duration", type=float, default=15)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    u = urlparse(a.url)
    pool = asyncio.Queue()
    for _ in range(a.connections):
        pool.put_nowait(await asyncio.open_connection(u.hostname, u.port))
    body = json.dumps({"model": "m", "stream": True, "max_tokens": a.max_tokens,
                       "messages": [{"role": "user", "content": "hello"}]}).encode()
    rng, ttfts, tasks = random.Random(a.seed), [], []
    end = time.perf_counter() + a.duration
    while time.perf_counter() < end:              # Poisson arrivals, as vLLM's default
        tasks.append(asyncio.create_task(one(pool, u.netloc, body, ttfts)))
        await asyncio.sleep(rng.expovariate(a.rate))
    await asyncio.gather(*tasks)
    ttfts.sort()
    pct = lambda p: ttfts[min(len(ttfts) - 1, int(p / 100 * len(ttfts)))]
    print(f"requests {len(ttfts)}  ttft p50 {pct(50):.1f} ms  p90 {pct(90):.1f} ms  p99 {pct(99):.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
