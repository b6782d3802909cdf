#!/usr/bin/env python3
"""A TCP proxy on loopback that delays each direction of every connection by a fixed time.

For scripts/bench-shared-crawl: crawlers sharing a PostgreSQL database over a network pay a
round trip per statement, which a database on loopback hides. This kernel has no netem, so the
delay is added here: every chunk read from one side at time t is written to the other side at
t + delay (or as soon after as the event loop wakes), in order. Chunks are not serialised behind
each other's delays: a reader task stamps each chunk and queues it, a writer task writes each
when its time comes, so a stream of many chunks is delayed by the delay once, not once per
chunk. Each connection has its own pair of such pumps, one per direction.

Usage: scripts/delay_proxy.py --to PORT [--to-host 127.0.0.1] [--delay-ms 1] [--listen 127.0.0.1]
Prints "listening on PORT" (the port picked: port 0) on stdout, then forwards until SIGTERM or
SIGINT, when it prints to stderr the connections, chunks and bytes forwarded and the mean
and largest delay actually added (the event loop wakes a little after each deadline).
"""

import argparse
import asyncio
import signal
import socket
import sys


class Totals:
    def __init__(self):
        self.connections = 0
        self.chunks = 0
        self.bytes = 0
        self.added = 0.0  # sum of the delays actually added, seconds
        self.largest = 0.0
        # How late the event loop wakes after a deadline (epoll counts whole milliseconds, the
        # kernel adds its slack): learnt as it goes, and taken off each sleep, so that the
        # delays added average the delay asked rather than half a millisecond more.
        self.oversleep = 0.0
        self.tasks = set()


CHUNK = 1 << 16


async def pump(reader, writer, delay, totals):
    """Copies reader to writer, each chunk `delay` seconds after it was read."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def read_side():
        try:
            while True:
                data = await reader.read(CHUNK)
                queue.put_nowait((loop.time(), data))
                if not data:
                    return
        except (ConnectionError, OSError):
            queue.put_nowait((loop.time(), b""))

    async def write_side():
        try:
            while True:
                stamp, data = await queue.get()
                wait = stamp + delay - loop.time()
                slept = wait > 0
                if slept:
                    await asyncio.sleep(max(0.0, wait - totals.oversleep))
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    await writer.drain()
                    return
                writer.write(data)
                late = loop.time() - stamp
                if slept:
                    learnt = totals.oversleep + 0.05 * (late - delay)
                    totals.oversleep = min(max(learnt, 0.0), delay)
                totals.chunks += 1
                totals.bytes += len(data)
                totals.added += late
                totals.largest = max(totals.largest, late)
                # Backpressure only when the kernel's buffer is full; the delay is not repeated.
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    reading = asyncio.ensure_future(read_side())
    try:
        await write_side()
    finally:
        reading.cancel()


def nodelay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


async def handle(client_reader, client_writer, args, totals):
    totals.connections += 1
    task = asyncio.current_task()
    totals.tasks.add(task)
    try:
        await forward(client_reader, client_writer, args, totals)
    except asyncio.CancelledError:
        pass  # stopping: the connection is dropped
    finally:
        totals.tasks.discard(task)


async def forward(client_reader, client_writer, args, totals):
    try:
        server_reader, server_writer = await asyncio.open_connection(args.to_host, args.to)
    except OSError:
        client_writer.close()
        return
    nodelay(client_writer)
    nodelay(server_writer)
    delay = args.delay_ms / 1000.0
    try:
        await asyncio.gather(
            pump(client_reader, server_writer, delay, totals),
            pump(server_reader, client_writer, delay, totals),
        )
    finally:
        for w in (client_writer, server_writer):
            try:
                w.close()
            except OSError:
                pass


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--to", type=int, required=True, help="the port to forward to")
    ap.add_argument("--to-host", default="127.0.0.1")
    ap.add_argument("--listen", default="127.0.0.1", help="loopback address to listen on")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=1.0, help="delay of each direction")
    args = ap.parse_args()
    if not args.listen.startswith("127."):
        ap.error("listens on loopback (127.0.0.0/8) only")
    totals = Totals()
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, args, totals), args.listen, args.port
    )
    port = server.sockets[0].getsockname()[1]
    print(f"listening on {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
        for task in list(totals.tasks):
            task.cancel()
        await asyncio.gather(*totals.tasks, return_exceptions=True)
    mean = 1000 * totals.added / totals.chunks if totals.chunks else 0.0
    print(
        f"delay_proxy: {totals.connections} connections, {totals.chunks} chunks, "
        f"{totals.bytes} bytes; added delay mean {mean:.2f} ms, largest "
        f"{1000 * totals.largest:.2f} ms (asked {args.delay_ms:g} ms)",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    asyncio.run(main())
