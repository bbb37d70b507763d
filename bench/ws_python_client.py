#!/usr/bin/env python3
"""The documented baseline WebSocket client of bench/ws.py: the `websockets` package (PyPI,
asyncio), CONNECTIONS connections each keeping IN_FLIGHT messages on the wire (a closed loop:
each reply sends the next message), for DURATION seconds. Prints the replies received.

  ws_python_client.py URL CONNECTIONS IN_FLIGHT DURATION MESSAGE
"""

import asyncio
import sys
import time

import websockets


async def connection(url, in_flight, until, message, counts):
    async with websockets.connect(url, compression=None, max_queue=None) as ws:
        for _ in range(in_flight):
            await ws.send(message)
        while time.monotonic() < until:
            await ws.recv()
            counts[0] += 1
            await ws.send(message)


async def main():
    url, connections, in_flight, duration, message = sys.argv[1:6]
    counts = [0]
    until = time.monotonic() + float(duration)
    await asyncio.gather(*(connection(url, int(in_flight), until, message, counts)
                           for _ in range(int(connections))))
    print(counts[0])


if __name__ == "__main__":
    asyncio.run(main())
