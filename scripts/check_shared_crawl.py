#!/usr/bin/env python3
"""The runs of scripts/check-shared-crawl: several `geode crawl --frontier` processes sharing one
PostgreSQL database, killed (-9), stopped and continued at random moments, then checked.

Called by scripts/check-shared-crawl, which builds geode, starts the throwaway PostgreSQL cluster
and generates the geminispace; see that script for what is checked. Each run here: a fresh
database, a fresh geode-fixture (its request log is the evidence), the seeds added, K crawlers
and `geode index --follow` started, faults injected on a schedule drawn from --seed and the run's
number, every process waited for, then the checks. Prints one line per run and a summary;
exits 1 when a run failed a check.
"""

import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time


def log(args, msg):
    if args.verbose:
        print(f"    [{time.monotonic() - args.t_origin:8.3f}] {msg}", flush=True)


class Proc:
    """One process of a run (a crawler incarnation or an index writer), its files and fate."""

    def __init__(self, name, argv, out, err):
        self.name = name
        self.argv = argv
        self.out_path = out
        self.err_path = err
        self.out = open(out, "wb")
        self.err = open(err, "wb")
        self.popen = subprocess.Popen(argv, stdout=self.out, stderr=self.err, stdin=subprocess.DEVNULL)
        self.started = time.monotonic()
        self.stopped_until = None  # SIGSTOPped until this monotonic time
        self.killed = False  # by us, with SIGKILL
        self.code = None

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        if self.code is None:
            code = self.popen.poll()
            if code is not None:
                self.code = code
                self.ended = time.monotonic()
                self.out.close()
                self.err.close()
        return self.code is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.pid, sig)

    def stderr_text(self):
        try:
            with open(self.err_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def fate(self):
        """How it ended, for the report: 'ok', 'killed', 'exit N: last line'."""
        if self.killed:
            return "killed"
        if self.code == 0:
            return "ok"
        text = [l for l in self.stderr_text().splitlines() if l.strip()]
        last = text[-1].strip() if text else ""
        how = f"signal {-self.code}" if self.code < 0 else f"exit {self.code}"
        return f"{how}: {last[:200]}"

    def panicked(self):
        return (not self.killed and self.code == 101) or "panicked" in self.stderr_text()


def psql(args, sql, db="postgres"):
    out = subprocess.run(
        ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", f"postgres://postgres@127.0.0.1:{args.port}/{db}", "-c", sql],
        check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


def fixture_priority():
    """Runs in the fixture's process before it starts: a higher CPU priority than the crawlers
    and the database, which share the two cores with it. The fixture's log is the evidence of
    politeness, and it stamps a connection when it accepts it: a fixture that waits for a core
    stamps a request late, so that the gap before it looks longer and the gap after it shorter
    than the crawler kept (run 33 of a 50-run check: four addresses 71 ms and then 41-44 ms
    apart at the same instant, where the crawlers kept 50 ms from their connect). Every thread
    inherits the priority. Without the right to raise it (not root), the fixture runs as is."""
    try:
        os.nice(-10)
    except OSError:
        pass


def start_fixture(args, run_dir):
    listen = []
    for i in range(1, args.ips + 1):
        listen += ["--listen", f"{args.ip_prefix}.{i}:0"]
    out = open(os.path.join(run_dir, "fixture.listening"), "w")
    err = open(os.path.join(run_dir, "fixture.err"), "w")
    p = subprocess.Popen(
        [os.path.join(args.bin, "geode-fixture"), "--root", args.space, *listen,
         "--log", os.path.join(run_dir, "requests.jsonl")],
        stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=fixture_priority,
    )
    deadline = time.monotonic() + 60
    addrs = []
    while time.monotonic() < deadline:
        with open(out.name) as f:
            addrs = [l.split()[-1] for l in f if l.startswith("listening on")]
        if len(addrs) == args.ips or p.poll() is not None:
            break
        time.sleep(0.05)
    if len(addrs) != args.ips:
        p.kill()
        sys.exit(f"check-shared-crawl: geode-fixture did not start: {open(err.name).read()}")
    return p, addrs


def calibrate(addr):
    """Connects to the fixture and closes at once: the log's record of this connection (no
    request, this local port) lines the log's clock up with time.monotonic()."""
    host, port = addr.rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    t0 = time.monotonic()
    s.connect((host, int(port)))
    t1 = time.monotonic()
    local_port = s.getsockname()[1]
    time.sleep(0.05)
    s.close()
    return (t0 + t1) / 2, local_port


def dur(d):
    return d["secs"] + d["nanos"] / 1e9


def read_requests(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def start_capture(args, run_dir):
    """Starts tcpdump on the loopback interface, recording the first packet (SYN) of every
    connection to the fixture's addresses: the kernel stamps it as the crawler's connect()
    sends it, whatever the fixture's scheduling. Returns the process and its file, or None
    when the check runs without a capture (--no-capture, no tcpdump, or not root)."""
    if not args.capture:
        return None
    path = os.path.join(run_dir, "syn.pcap")
    err_path = os.path.join(run_dir, "tcpdump.err")
    p = subprocess.Popen(
        ["tcpdump", "-i", "lo", "-n", "-U", "--immediate-mode", "-B", "32768", "-w", path,
         f"dst net {args.ip_prefix}.0/24 and tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn"],
        stdout=subprocess.DEVNULL, stderr=open(err_path, "w"), stdin=subprocess.DEVNULL,
        preexec_fn=fixture_priority,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if "listening on" in open(err_path).read():
            return p, path
        if p.poll() is not None:
            break
        time.sleep(0.02)
    p.kill()
    sys.exit(f"check-shared-crawl: tcpdump did not start: {open(err_path).read().strip()}")


def read_syns(path):
    """The SYNs of a pcap file as (unix time, destination ip, source port), for the link types
    tcpdump writes for `lo` (Ethernet, Linux cooked v1/v2, raw IP)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        sys.exit(f"check-shared-crawl: {path} is not a pcap file")
    frac = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    skip = {1: 14, 113: 16, 276: 20, 101: 0, 228: 0}.get(linktype)
    if skip is None:
        sys.exit(f"check-shared-crawl: {path}: link type {linktype} not read")
    syns = []
    at = 24
    while at + 16 <= len(data):
        sec, sub, incl, _ = struct.unpack(endian + "IIII", data[at:at + 16])
        pkt = data[at + 16:at + 16 + incl]
        at += 16 + incl
        ip = pkt[skip:]
        if len(ip) < 20 or ip[0] >> 4 != 4:
            continue
        ihl = (ip[0] & 15) * 4
        dst = ".".join(str(b) for b in ip[16:20])
        sport = struct.unpack(">H", ip[ihl:ihl + 2])[0]
        syns.append((sec + sub * frac, dst, sport))
    return syns


def run_once(args, run, generated, seeds, resolve):
    rng = random.Random(args.seed * 100003 + run)
    run_dir = os.path.join(args.work, f"run{run:03d}")
    os.makedirs(run_dir)
    db = f"run{run:03d}"
    psql(args, f"CREATE DATABASE {db}")
    direct = f"postgres://postgres@127.0.0.1:{args.port}/{db}"
    url = direct
    proxy = None
    if args.db_delay_ms > 0:
        pout = os.path.join(run_dir, "proxy.out")
        proxy = subprocess.Popen(
            [sys.executable, os.path.join(args.repo, "scripts", "delay_proxy.py"), "--to", str(args.port),
             "--delay-ms", str(args.db_delay_ms)],
            stdout=open(pout, "w"), stderr=open(os.path.join(run_dir, "proxy.err"), "w"),
        )
        for _ in range(100):
            text = open(pout).read()
            if text.startswith("listening on"):
                break
            time.sleep(0.05)
        url = f"postgres://postgres@127.0.0.1:{text.split()[-1]}/{db}"
    subprocess.run([os.path.join(args.bin, "geode"), "seed", "add", "--frontier", direct, *seeds],
                   check=True, stdout=subprocess.DEVNULL)
    fixture, addrs = start_fixture(args, run_dir)
    capture = start_capture(args, run_dir)
    # Capsule i is served on address i mod --ips (the fixture's port there: it picks one).
    resolve_args = []
    for i, host in enumerate(resolve):
        resolve_args += ["--resolve", f"{host}={addrs[i % len(addrs)]}"]
    cal_at, cal_port = calibrate(addrs[0])
    geode = os.path.join(args.bin, "geode")

    crawlers = {}  # slot -> current Proc
    history = []  # every Proc of the run
    incarnation = collections.Counter()

    def start_crawler(slot, fresh_id=False):
        incarnation[slot] += 1
        n = incarnation[slot]
        data = os.path.join(run_dir, f"c{slot}" + (f"-new{n}" if fresh_id else ""))
        argv = [geode, "crawl", "--frontier", url, "--data", data, "--concurrency", str(args.concurrency),
                "--min-delay-ms", str(args.min_delay_ms), "--lease", f"{args.lease}s", "--json", *resolve_args]
        p = Proc(f"crawler {slot}.{n}", argv, os.path.join(run_dir, f"c{slot}.{n}.out"),
                 os.path.join(run_dir, f"c{slot}.{n}.err"))
        crawlers[slot] = p
        history.append(p)
        log(args, f"start {p.name} pid {p.pid}" + (" (new id)" if fresh_id else ""))

    writers = []

    def start_writer():
        n = len(writers) + 1
        argv = [geode, "index", "--follow", "--frontier", url, "--data", os.path.join(run_dir, "index"), "--json"]
        p = Proc(f"index writer {n}", argv, os.path.join(run_dir, f"w{n}.out"), os.path.join(run_dir, f"w{n}.err"))
        writers.append(p)
        history.append(p)
        log(args, f"start {p.name} pid {p.pid}")

    t_start = time.monotonic()
    t_start_wall = time.time()
    for slot in range(args.crawlers):
        start_crawler(slot)
    start_writer()

    events = []  # (kind, monotonic time, process name, detail)
    pending = []  # (monotonic time, action, Proc/slot)
    chaos_end = t_start + args.chaos_secs
    next_event = t_start + rng.uniform(0.3, args.event_gap)
    deadline = t_start + args.run_timeout
    hung = False
    while True:
        now = time.monotonic()
        for item in sorted(pending, key=lambda x: x[0]):
            at, action, target = item
            if at > now:
                continue
            pending.remove(item)
            if action == "cont":
                target.stopped_until = None
                if target.alive():
                    target.signal(signal.SIGCONT)
                    events.append(("cont", now, target.name, ""))
                    log(args, f"SIGCONT {target.name}")
            elif action == "restart":
                start_crawler(target, fresh_id=rng.random() < 0.3)
            elif action == "restart-writer":
                start_writer()
        live = [s for s, p in crawlers.items() if p.alive()]
        writer = writers[-1] if writers else None
        if now >= next_event and now < chaos_end and live:
            running = [s for s in live if crawlers[s].stopped_until is None]
            choices = []
            if running:
                choices += ["kill"] * 4 + ["stop"] * 4
            if writer is not None and writer.alive() and writer.stopped_until is None:
                choices += ["kill-writer"]
            if choices:
                kind = rng.choice(choices)
                if kind == "kill":
                    slot = rng.choice(running)
                    p = crawlers[slot]
                    p.killed = p.alive()
                    p.signal(signal.SIGKILL)
                    events.append(("kill", now, p.name, ""))
                    # Crawler 0 always comes back, so that one crawler sees the work through.
                    if slot == 0 or rng.random() < 0.6:
                        pending.append((now + rng.uniform(0, 3), "restart", slot))
                    log(args, f"SIGKILL {p.name}")
                elif kind == "stop":
                    slot = rng.choice(running)
                    p = crawlers[slot]
                    # Crawler 0's stops stay short of its lease (see above); others' may be longer.
                    top = 0.5 * args.lease if slot == 0 else 2.5 * args.lease
                    length = rng.uniform(0.3, top)
                    p.signal(signal.SIGSTOP)
                    p.stopped_until = now + length
                    pending.append((now + length, "cont", p))
                    events.append(("stop", now, p.name, f"{length:.1f}s"))
                    log(args, f"SIGSTOP {p.name} for {length:.1f} s")
                else:
                    writer.killed = writer.alive()
                    writer.signal(signal.SIGKILL)
                    events.append(("kill", now, writer.name, ""))
                    pending.append((now + rng.uniform(0, 2), "restart-writer", None))
                    log(args, f"SIGKILL {writer.name}")
            next_event = now + rng.uniform(0.3, args.event_gap)
        if not live and not any(a in ("restart", "cont") for _, a, _ in pending):
            break
        if now > deadline:
            hung = True
            for p in history:
                if p.alive():
                    p.signal(signal.SIGCONT)
                    p.killed = True
                    p.signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    t_crawled = time.monotonic()
    for p in history:
        while p.name.startswith("crawler") and p.alive():
            time.sleep(0.02)

    # Nothing may be left due now: every crawler has ended, and one of them always ran on.
    due_left = int(psql(args, "SELECT count(*) FROM urls WHERE due_at IS NOT NULL AND due_at <= extract(epoch from now())", db))
    claimed_left = int(psql(args, "SELECT count(*) FROM urls WHERE claimed = 1", db))
    never = int(psql(args, "SELECT count(*) FROM urls WHERE fetched_at IS NULL", db))

    # The index writer that follows is stopped as an operator would (SIGTERM), then one
    # `geode index` applies whatever is left.
    for w in writers:
        if w.alive():
            w.signal(signal.SIGCONT)
            w.signal(signal.SIGTERM)
    for w in writers:
        while w.alive():
            time.sleep(0.02)
    final = subprocess.run([geode, "index", "--frontier", url, "--data", os.path.join(run_dir, "index"), "--json"],
                           capture_output=True, text=True)
    with open(os.path.join(run_dir, "index-final.out"), "w") as f:
        f.write(final.stdout + final.stderr)

    # Stop the fixture: it writes its request log.
    cal2_at, cal2_port = calibrate(addrs[-1])
    fixture.send_signal(signal.SIGTERM)
    fixture.wait(timeout=60)
    syns = None
    if capture is not None:
        time.sleep(0.3)  # the last packets reach the file (each is written as it comes)
        capture[0].send_signal(signal.SIGINT)
        capture[0].wait(timeout=30)
        # The calibrations' own connections go (a crawler's connection elsewhere, or later,
        # may use the same local port).
        cals = [(addrs[0].rsplit(":", 1)[0], cal_port, t_start_wall + cal_at - t_start),
                (addrs[-1].rsplit(":", 1)[0], cal2_port, t_start_wall + cal2_at - t_start)]
        syns = [(at, ip, port) for at, ip, port in read_syns(capture[1])
                if not any(ip == c_ip and port == c_port and abs(at - c_at) < 1.0 for c_ip, c_port, c_at in cals)]
    if proxy is not None:
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=30)

    with open(os.path.join(run_dir, "events.txt"), "w") as f:
        for kind, at, name, detail in events:
            f.write(f"{at - t_start:8.3f} {kind} {name} {detail}\n")
        for p in history:
            f.write(f"{p.name}: pid {p.pid}, {p.started - t_start:.3f}-"
                    f"{getattr(p, 'ended', t_start) - t_start:.3f} s, {p.fate()}\n")
    failures = []
    # (d) no panic.
    panics = [p.name for p in history if p.panicked()]
    if panics:
        failures.append(f"panic in {', '.join(panics)}")
    if hung:
        failures.append(f"crawlers still running after {args.run_timeout} s (killed)")
    if final.returncode != 0:
        failures.append(f"geode index failed: {final.stderr.strip()[-300:]}")
    if due_left:
        failures.append(f"{due_left} URLs due after every crawler ended ({claimed_left} still claimed, {never} never fetched)")

    # (a) every page indexed exactly once.
    stats = json.loads(subprocess.run(
        [geode, "stats", "--frontier", direct, "--data", os.path.join(run_dir, "index"), "--json"],
        check=True, capture_output=True, text=True).stdout)
    docs, marked = stats["index_documents"], stats["pages_indexed"]
    listed = collections.Counter()
    for host in resolve:
        out = subprocess.run([geode, "search", "--data", os.path.join(run_dir, "index"), "--json", "--all",
                              "--limit", "100000", f"site:{host}"], capture_output=True, text=True)
        if out.returncode == 0:
            for hit in json.loads(out.stdout)["hits"]:
                listed[hit["url"]] += 1
    gen = set(generated)
    twice = sorted(u for u, n in listed.items() if n > 1)
    missing = sorted(gen - set(listed))
    extra = sorted(set(listed) - gen)
    if docs != len(generated) or marked != len(generated) or twice or missing or extra:
        failures.append(
            f"index: {docs} documents, {marked} marked in_index, of {len(generated)} pages; "
            f"{len(missing)} missing (e.g. {missing[:3]}), {len(twice)} listed twice (e.g. {twice[:3]}), "
            f"{len(extra)} not generated (e.g. {extra[:3]})")

    # The fixture's log, on the clock of time.monotonic().
    requests = read_requests(os.path.join(run_dir, "requests.jsonl"))
    offsets = []
    for at, port in ((cal_at, cal_port), (cal2_at, cal2_port)):
        for r in requests:
            if r["request"] == "" and int(r["peer"].rsplit(":", 1)[1]) == port:
                offsets.append(at - dur(r["accepted"]))
    if len(offsets) != 2:
        failures.append("the calibration connections are not in the fixture's log")
        offsets = offsets or [t_start]
    offset = sum(offsets) / len(offsets)
    drift = max(offsets) - min(offsets)
    cal_ports = {cal_port, cal2_port}
    fetches = []  # (accepted, closed, local ip, request)
    for r in requests:
        if r["request"] == "" and int(r["peer"].rsplit(":", 1)[1]) in cal_ports:
            continue
        fetches.append((dur(r["accepted"]) + offset, dur(r["closed"]) + offset, r["local"].rsplit(":", 1)[0], r["request"]))

    # (b) fetched twice: only a killed or stopped crawler's in-flight work may be fetched again.
    window = args.window_ms / 1000
    intervals = []  # times around which a refetch is explained
    for kind, at, name, _ in events:
        if not name.startswith("crawler"):
            continue
        if kind in ("kill", "stop"):
            intervals.append((at - window, at + 0.05, at))
        elif kind == "cont":
            intervals.append((at - 0.05, at + window, at))
    by_url = collections.defaultdict(list)
    for acc, _, _, req in fetches:
        if req in gen:
            by_url[req].append(acc)
    dup_explained = dup_unexplained = 0
    lead = 0.0  # the farthest an explained earlier fetch lay from its kill, stop or continue
    unexplained = []
    for u, times in by_url.items():
        if len(times) < 2:
            continue
        times.sort()
        # A page fetched n times has n - 1 fetches too many, each explained by one of its
        # fetches that was a faulted crawler's in-flight work: shortly before a kill or a stop,
        # or shortly after a continue (a stopped crawler's requests end after it goes on).
        faulted = 0
        for t in times:
            near = [abs(e - t) for a, b, e in intervals if a <= t <= b]
            if near:
                faulted += 1
                lead = max(lead, min(near))
        explained = min(len(times) - 1, faulted)
        dup_explained += explained
        if explained < len(times) - 1:
            dup_unexplained += len(times) - 1 - explained
            unexplained.append((u, [round(x - t_start, 3) for x in times]))
    kill_stop = sum(1 for k, _, n, _ in events if k in ("kill", "stop") and n.startswith("crawler"))
    allowed = kill_stop * args.concurrency
    dups = dup_explained + dup_unexplained
    if dup_unexplained or dups > allowed:
        failures.append(
            f"{dups} refetches ({dup_unexplained} unexplained, {allowed} allowed for {kill_stop} kills/stops): "
            + "; ".join(f"{u} at {ts} s" for u, ts in unexplained[:5]))

    # (c) politeness per address: one request in flight, starts --min-delay-ms apart.
    slack = args.slack_ms / 1000
    gap_needed = args.min_delay_ms / 1000 - slack
    stops = [(at, at + float(d[:-1])) for k, at, n, d in events if k == "stop"]
    per_ip = collections.defaultdict(list)
    for f in fetches:
        per_ip[f[2]].append(f)
    overlaps = too_soon = frozen = 0
    worst = None
    breaches = []
    for ip, fs in per_ip.items():
        fs.sort()
        for a, b in zip(fs, fs[1:]):
            if b[0] < a[1] - slack:
                # A connection held open by a stopped crawler cannot be closed by it: noted apart.
                if any(s <= a[1] and a[0] <= e for s, e in stops) and b[0] >= a[0] + gap_needed:
                    frozen += 1
                else:
                    overlaps += 1
                    breaches.append(f"{ip}: {b[3]} at {b[0] - t_start:.3f} s while {a[3]} "
                                    f"({a[0] - t_start:.3f}-{a[1] - t_start:.3f} s) was open")
    # Starts: the kernel's stamps of the SYNs when captured (the fixture stamps a connection
    # when it accepts it, late when it waited for a core); otherwise the fixture's log.
    log_short = 0
    log_worst = None
    for ip, fs in per_ip.items():
        for a, b in zip(fs, fs[1:]):
            gap = b[0] - a[0]
            log_worst = gap if log_worst is None else min(log_worst, gap)
            if gap < gap_needed:
                log_short += 1
                if syns is None:
                    too_soon += 1
                    breaches.append(f"{ip}: {b[3]} {1000 * gap:.1f} ms after {a[3]} (at {a[0] - t_start:.3f} s)")
            if syns is None and (worst is None or gap < worst[0]):
                worst = (gap, ip, a[3], b[3])
    capture_note = None
    if syns is not None:
        named = {}
        for r in requests:
            named[(r["local"].rsplit(":", 1)[0], int(r["peer"].rsplit(":", 1)[1]))] = r["request"] or "(no request)"
        by_ip = collections.defaultdict(list)
        syn_short = 0
        for at, ip, port in syns:
            by_ip[ip].append((at, named.get((ip, port), f"port {port}")))
        for ip, starts in by_ip.items():
            starts.sort()
            for a, b in zip(starts, starts[1:]):
                gap = b[0] - a[0]
                if worst is None or gap < worst[0]:
                    worst = (gap, ip, a[1], b[1])
                if gap < gap_needed:
                    too_soon += 1
                    syn_short += 1
                    breaches.append(f"{ip}: SYN of {b[1]} {1000 * gap:.1f} ms after that of {a[1]} "
                                    f"(at {a[0] - t_start_wall:.3f} s)")
        dropped = re.search(r"(\d+) packets? dropped by kernel", open(os.path.join(run_dir, "tcpdump.err")).read())
        if dropped and int(dropped.group(1)) > 0:
            failures.append(f"the capture lost {dropped.group(1)} packets: starts not all seen")
        if len(syns) < len(fetches):
            failures.append(f"the capture holds {len(syns)} SYNs for {len(fetches)} connections in the fixture's log")
        if log_short > syn_short:
            log_ms = f"{1000 * log_worst:.1f}"
            capture_note = (f"the fixture's log has {log_short} starts closer than {gap_needed * 1000:.0f} ms "
                            f"(worst {log_ms} ms), the SYNs' stamps {syn_short}: the others stamped late on accept")
    if overlaps or too_soon:
        failures.append(f"politeness: {overlaps} overlaps, {too_soon} starts too soon: " + "; ".join(breaches[:4]))

    fates = collections.Counter(p.fate() if p.fate() in ("ok", "killed") else "error" for p in history)
    errors = [f"{p.name}: {p.fate()}" for p in history if p.fate() not in ("ok", "killed")]
    counts = collections.Counter(k for k, _, _, _ in events)
    worst_ms = f"{1000 * worst[0]:.1f}" if worst else "-"
    print(
        f"run {run:3d}: {counts['kill']} kills ({counts['kill'] - kill_stop + counts['stop']} of the index writer), "
        f"{counts['stop']} stops; {t_crawled - t_start:5.1f} s; "
        f"indexed {docs}/{len(generated)}; refetched {dup_explained} explained"
        + (f" (within {1000 * lead:.0f} ms of a fault)" if dup_explained else "")
        + f", {dup_unexplained} unexplained; "
        f"politeness: worst gap {worst_ms} ms, {overlaps + too_soon} violations"
        + (f" ({frozen} overlaps with a stopped crawler's open connection)" if frozen else "")
        + f"; due left {due_left}; exits {dict(fates)}"
        + ("" if not failures else "  FAILED"),
        flush=True,
    )
    for e in errors:
        print(f"         {e}", flush=True)
    for f in failures:
        print(f"         FAIL {f}", flush=True)
    if capture_note:
        print(f"         note: {capture_note}", flush=True)
    if drift > 0.005:
        print(f"         note: the log's clock moved {1000 * drift:.1f} ms between calibrations", flush=True)
    if not failures and not args.keep:
        shutil.rmtree(run_dir, ignore_errors=True)
        psql(args, f"DROP DATABASE {db}")
    return {
        "failures": failures, "kills": counts["kill"], "stops": counts["stop"], "dup_explained": dup_explained,
        "dup_unexplained": dup_unexplained, "violations": overlaps + too_soon, "frozen": frozen,
        "due_left": due_left, "errors": len(errors), "panics": len(panics), "worst": worst[0] if worst else None,
        "secs": t_crawled - t_start, "lead": lead,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--space", required=True)
    ap.add_argument("--urls", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--capsules", type=int, required=True)
    ap.add_argument("--ips", type=int, required=True)
    ap.add_argument("--ip-prefix", default="127.0.4")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--crawlers", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--min-delay-ms", type=int, default=50)
    ap.add_argument("--lease", type=int, default=3)
    ap.add_argument("--db-delay-ms", type=float, default=0)
    ap.add_argument("--chaos-secs", type=float, default=15)
    ap.add_argument("--event-gap", type=float, default=1.5)
    ap.add_argument("--window-ms", type=int, default=2000)
    ap.add_argument("--slack-ms", type=int, default=5)
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--capture", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    args.t_origin = time.monotonic()
    with open(args.urls) as f:
        generated = [l.strip() for l in f if l.strip()]
    hosts = [f"cap{i:03d}.test" for i in range(args.capsules)]
    seeds = [f"gemini://{h}/" for h in hosts]
    print(f"== {args.runs} runs, {args.crawlers} crawlers (--concurrency {args.concurrency}, --min-delay-ms "
          f"{args.min_delay_ms}, --lease {args.lease}s), {args.capsules} capsules, {len(generated)} pages on "
          f"{args.ips} addresses, seed {args.seed}" + (f", database delay {args.db_delay_ms:g} ms" if args.db_delay_ms else ""),
          flush=True)
    results = []
    for run in range(1, args.runs + 1):
        results.append(run_once(args, run, generated, seeds, hosts))
    failed = [i + 1 for i, r in enumerate(results) if r["failures"]]
    tot = lambda k: sum(r[k] for r in results)
    worst = [r["worst"] for r in results if r["worst"] is not None]
    print(
        f"== {len(results)} runs, {len(failed)} failed{(' (runs ' + ', '.join(map(str, failed)) + ')') if failed else ''}; "
        f"{tot('kills')} kills, {tot('stops')} stops; refetches {tot('dup_explained')} explained "
        f"(within {1000 * max(r['lead'] for r in results):.0f} ms of a fault), "
        f"{tot('dup_unexplained')} unexplained; politeness violations {tot('violations')}"
        f" (worst gap {1000 * min(worst):.1f} ms; {tot('frozen')} overlaps with a stopped crawler's connection); "
        f"due left {tot('due_left')}; processes that ended in an error {tot('errors')}, panics {tot('panics')}; "
        f"mean crawl {tot('secs') / len(results):.1f} s",
        flush=True,
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
