#!/usr/bin/env python3
"""Baseline for scripts/bench-crawl: a bare asyncio Gemini fetch loop over a given URL list.

For every URL in --urls it opens a TLS connection to the address --hosts maps the URL's host to
(SNI = the host name, certificates not verified), sends the request, reads the response to the
end and closes. Nothing else: no parsing, no link discovery, no storage. At most --concurrency
fetches run at once and, unless --no-per-ip, at most one per IP address (the rule geode keeps),
implemented the simple way: a semaphore per IP address inside a global semaphore.

Prints one line of key=value pairs on stdout: fetched (answers with status 20), other (other
statuses), errors, bytes, wall_s and peak_sockets (most connections open at once, counted from
before connect until after close).

Not a Gemini client for real use (no redirects, no verification, no limits beyond a timeout).
"""

import argparse
import asyncio
import ssl
import sys
import time
from urllib.parse import urlsplit


class Stats:
    def __init__(self):
        self.fetched = 0
        self.other = 0
        self.errors = 0
        self.bytes = 0
        self.open = 0
        self.peak = 0
        self.first_error = None


async def fetch(url, host, ip, port, ctx, stats, timeout):
    stats.open += 1
    stats.peak = max(stats.peak, stats.open)
    writer = None
    try:
        async def exchange():
            nonlocal writer
            reader, writer = await asyncio.open_connection(
                ip, port, ssl=ctx, server_hostname=host)
            writer.write(url.encode() + b"\r\n")
            await writer.drain()
            return await reader.read()  # to EOF: the whole response

        data = await asyncio.wait_for(exchange(), timeout)
        stats.bytes += len(data)
        if data[:2] == b"20":
            stats.fetched += 1
        else:
            stats.other += 1
    except (OSError, asyncio.TimeoutError, ssl.SSLError, EOFError) as e:
        stats.errors += 1
        if stats.first_error is None:
            stats.first_error = f"{url}: {e!r}"
    finally:
        if writer is not None:
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), 5)
            except (OSError, asyncio.TimeoutError, ssl.SSLError):
                pass
        stats.open -= 1


async def run(jobs, concurrency, per_ip, timeout):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    stats = Stats()
    global_sem = asyncio.Semaphore(concurrency)
    ip_sems = {}

    async def one(url, host, ip, port):
        if per_ip:
            # The IP semaphore first: a task waiting for its IP must not hold a global slot.
            sem = ip_sems.setdefault(ip, asyncio.Semaphore(1))
            async with sem:
                async with global_sem:
                    await fetch(url, host, ip, port, ctx, stats, timeout)
        else:
            async with global_sem:
                await fetch(url, host, ip, port, ctx, stats, timeout)

    await asyncio.gather(*(one(*job) for job in jobs))
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--urls", required=True, help="file with one gemini:// URL a line")
    ap.add_argument("--hosts", required=True,
                    help="file with lines 'HOST IP:PORT' mapping every host to an address")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--no-per-ip", action="store_true",
                    help="drop the one-connection-per-IP rule (global limit only)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per fetch")
    args = ap.parse_args()

    addrs = {}
    with open(args.hosts) as f:
        for line in f:
            if line.strip():
                host, addr = line.split()
                ip, _, port = addr.rpartition(":")
                addrs[host] = (ip, int(port))
    jobs = []
    with open(args.urls) as f:
        for line in f:
            url = line.strip()
            if not url:
                continue
            host = urlsplit(url).hostname
            if host not in addrs:
                sys.exit(f"bench_fetch_baseline: no address for {host} ({url})")
            jobs.append((url, host) + addrs[host])

    start = time.monotonic()
    stats = asyncio.run(run(jobs, args.concurrency, not args.no_per_ip, args.timeout))
    wall = time.monotonic() - start
    if stats.first_error:
        print(f"bench_fetch_baseline: first error: {stats.first_error}", file=sys.stderr)
    print(f"fetched={stats.fetched} other={stats.other} errors={stats.errors} "
          f"bytes={stats.bytes} wall_s={wall:.3f} peak_sockets={stats.peak}")


if __name__ == "__main__":
    main()
