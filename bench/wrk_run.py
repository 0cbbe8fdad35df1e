#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run wrk for bench/run.sh's http scenarios and print its result as loadgen does.

  wrk_run.py --ns NS -c CONNS -T SECONDS [--warmup S] [--close] [--watch-pid PID ...] URL

wrk runs in network namespace NS (nsenter), 2 threads, with --latency. The
last line is 'JSON {...}' with the fields bench/report.py reads from loadgen:
msgs_per_s (requests/s), msgs, lat_us (p50/p99/p999), cpu_s (watched: the
CPU seconds of --watch-pid processes, system_busy: of the whole machine, both
over the measured interval) and errors (socket errors and non-2xx answers).
The warm-up is a separate wrk run of --warmup seconds whose result is dropped.
"""
import argparse
import json
import os
import re
import subprocess
import sys

TICK = os.sysconf("SC_CLK_TCK")


def system_busy():
    """Busy CPU seconds of the whole machine (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / TICK


def pid_cpu(pid):
    """utime + stime of a process (every thread), 0 once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except OSError:
        return 0.0


def to_us(text):
    m = re.match(r"([0-9.]+)(us|ms|s)$", text)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]


def parse(out):
    """Requests, requests/s, latency percentiles and errors from wrk --latency's report."""
    res = {"msgs": 0, "msgs_per_s": 0.0, "errors": 0, "lat_us": {"count": 0}}
    m = re.search(r"^\s*(\d+) requests in", out, re.M)
    if m:
        res["msgs"] = int(m.group(1))
    m = re.search(r"^Requests/sec:\s*([0-9.]+)", out, re.M)
    if m:
        res["msgs_per_s"] = float(m.group(1))
    for pct, key in (("50", "p50"), ("99", "p99"), ("99.9", "p999")):
        m = re.search(r"^\s*%s%%\s+(\S+)" % re.escape(pct), out, re.M)
        if m and to_us(m.group(1)) is not None:
            res["lat_us"][key] = to_us(m.group(1))
    if "p50" in res["lat_us"]:
        res["lat_us"]["count"] = res["msgs"]
        res["lat_us"].setdefault("p999", res["lat_us"].get("p99"))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        res["errors"] += sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        res["errors"] += int(m.group(1))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", required=True)
    ap.add_argument("-c", "--connections", type=int, default=64)
    ap.add_argument("-T", "--duration", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--close", action="store_true", help="'Connection: close': a new connection per request")
    ap.add_argument("--watch-pid", type=int, action="append", default=[])
    ap.add_argument("-q", action="store_true", help="accepted for loadgen's command line; wrk is quiet anyway")
    ap.add_argument("url")
    a = ap.parse_args()

    def wrk(seconds):
        cmd = ["nsenter", "--net=/run/netns/" + a.ns, "wrk", "-t", "2", "-c", str(a.connections),
               "-d", "%ds" % max(1, round(seconds)), "--latency"]
        if a.close:
            cmd += ["-H", "Connection: close"]
        return subprocess.run(cmd + [a.url], capture_output=True, text=True)

    if a.warmup > 0:
        wrk(a.warmup)
    busy0, watched0 = system_busy(), sum(pid_cpu(p) for p in a.watch_pid)
    run = wrk(a.duration)
    busy1, watched1 = system_busy(), sum(pid_cpu(p) for p in a.watch_pid)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        sys.stderr.write(run.stderr)
        print("wrk_run.py: wrk exited %d" % run.returncode, file=sys.stderr)
        return 1
    res = parse(run.stdout)
    res.update({"tool": "wrk", "mode": "http-close" if a.close else "http-ka", "conns": a.connections,
                "duration_s": a.duration,
                "cpu_s": {"system_busy": round(busy1 - busy0, 3)}})
    if a.watch_pid:
        res["cpu_s"]["watched"] = round(watched1 - watched0, 3)
    print("JSON " + json.dumps(res))
    return 0 if res["msgs"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
