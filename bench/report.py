#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise bench/run.sh results: medians, ratios, CPU cost, chart.

  report.py --line RUNS.jsonl          one line about the last run (progress)
  report.py --raw RUNS.jsonl --out R.json [--png R.png] [--skips S.jsonl]
            [--meta key=value ...]     table on stdout, R.json, chart
  report.py --table R.json             the table again from a results file
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

# scenario -> (result field, unit, scale for display, what the CPU is per)
SCENARIOS = {
    "pp50": ("msgs_per_s", "msg/s", 1, "Mmsg"),
    "pp1000": ("msgs_per_s", "msg/s", 1, "Mmsg"),
    "bulk1-down": ("rx_Bps", "MB/s", 1e-6, "GB"),
    "bulk1-up": ("tx_Bps", "MB/s", 1e-6, "GB"),
    "bulk8-down": ("rx_Bps", "MB/s", 1e-6, "GB"),
    "bulk8-up": ("tx_Bps", "MB/s", 1e-6, "GB"),
    "connrate": ("msgs_per_s", "conn/s", 1, "Mconn"),
    # Echoed bytes: each crossed the proxy both ways, so this is the rate of either direction.
    "stream50": ("rx_Bps", "MB/s", 1e-6, "GB"),
    "udp-stream": ("rx_pps", "pkt/s", 1, "Mpkt"),
    "udp-rr": ("rx_pps", "req/s", 1, "Mreq"),
    "http-ka": ("msgs_per_s", "req/s", 1, "Mreq"),
    "http-close": ("msgs_per_s", "req/s", 1, "Mreq"),
}
TITLES = {
    "pp50": "TCP ping-pong, 50 conns, 64 B (PROXY v1)",
    "pp1000": "TCP ping-pong, 1000 conns, 64 B",
    "bulk1-down": "TCP bulk download, 1 stream",
    "bulk1-up": "TCP bulk upload, 1 stream",
    "bulk8-down": "TCP bulk download, 8 streams",
    "bulk8-up": "TCP bulk upload, 8 streams",
    "connrate": "TCP connections/s (connect, 64 B echo, close)",
    "stream50": "TCP two-way streams, 50 conns, flat out through an echo (tcpkali's method)",
    "udp-stream": "UDP stream, 50 flows, 1200 B (delivered)",
    "udp-rr": "UDP request/response, 50 flows, 1200 B",
    "http-ka": "HTTP keep-alive: wrk, 64 conns -> HAProxy send-proxy-v2 -> proxy -> nginx",
    "http-close": "HTTP Connection: close (a connection per request), same path",
}


def scenario_info(name, result=None):
    if name in SCENARIOS:
        return SCENARIOS[name]
    if result and result.get("tool") == "udpgen":
        return ("rx_pps", "pkt/s", 1, "Mpkt")
    if result and result.get("mode") == "bulk":
        return ("rx_Bps" if result.get("direction") == "down" else "tx_Bps", "MB/s", 1e-6, "GB")
    return ("msgs_per_s", "msg/s", 1, "Mmsg")


def units_done(name, r):
    """How many CPU units (GB, million messages...) the run moved."""
    field, _, _, per = scenario_info(name, r)
    if per == "GB":
        key = "rx_bytes" if field.startswith("rx") else "tx_bytes"
        return r[key] / 1e9
    if r.get("tool") == "udpgen":
        return r["rx_pkts"] / 1e6
    return r["msgs"] / 1e6


def baselines(cfg):
    """The configurations a configuration is compared with."""
    if cfg.startswith("haproxy"):
        return "haproxy", "haproxy+go-mmproxy"
    return "none", "go-mmproxy"


def fmt_num(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e4:
        return "%.1fk" % (v / 1e3)
    if v >= 100:
        return "%.0f" % v
    return "%.2f" % v


def fmt_ratio(v):
    return "-" if v is None else "%.2f" % v


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def load_jsonl(path):
    out = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


def summarise(runs):
    order_s, order_c, groups = [], [], {}
    for run in runs:
        s, c = run["scenario"], run["config"]
        if s not in order_s:
            order_s.append(s)
        if c not in order_c:
            order_c.append(c)
        groups.setdefault((s, c), []).append(run)
    rows = []
    for s in order_s:
        for c in order_c:
            if (s, c) not in groups:
                continue
            ok = [r["result"] for r in groups[(s, c)] if r.get("ok")]
            field, unit, scale, per = scenario_info(s, ok[0] if ok else None)
            row = {
                "scenario": s,
                "config": c,
                "runs": len(groups[(s, c)]),
                "ok_runs": len(ok),
                "metric": field,
                "unit": unit,
                "values": [r[field] * scale for r in ok],
                "median": median([r[field] * scale for r in ok]),
                "errors": sum(r.get("errors", 0) for r in ok),
                "cpu_per": per,
            }
            lat = [r for r in ok if r.get("lat_us", {}).get("count")]
            row["p50_us"] = median([r["lat_us"]["p50"] for r in lat])
            row["p99_us"] = median([r["lat_us"]["p99"] for r in lat])
            row["p999_us"] = median([r["lat_us"]["p999"] for r in lat])
            cpu_p, cpu_s = [], []
            for r in ok:
                units = units_done(s, r)
                if units <= 0:
                    continue
                w = r.get("cpu_s", {}).get("watched")
                if w is not None:
                    cpu_p.append(w / units)
                cpu_s.append(r["cpu_s"]["system_busy"] / units)
            row["proxy_cpu_per_unit"] = median(cpu_p)
            row["system_cpu_per_unit"] = median(cpu_s)
            if ok and ok[0].get("tool") == "udpgen":
                row["loss"] = median([r["loss"] for r in ok])
            rows.append(row)
    by = {(r["scenario"], r["config"]): r for r in rows}
    for r in rows:
        base, peer = baselines(r["config"])
        for key, other in (("vs_none", base), ("vs_go_mmproxy", peer)):
            o = by.get((r["scenario"], other))
            if o and o["median"] and r["median"] is not None:
                r[key] = r["median"] / o["median"]
            else:
                r[key] = None
    return rows, order_s, order_c


def print_table(rows, skips, meta, out=sys.stdout):
    hdr = ("scenario", "config", "median", "unit", "vs none", "vs go-mm", "p50 us", "p99 us",
           "proxy CPU s/unit", "system CPU s/unit", "loss", "errors", "runs")
    lines = []
    for r in rows:
        per = r["cpu_per"]
        lines.append((
            r["scenario"], r["config"], fmt_num(r["median"]), r["unit"],
            fmt_ratio(r["vs_none"]), fmt_ratio(r["vs_go_mmproxy"]),
            fmt_num(r["p50_us"]), fmt_num(r["p99_us"]),
            "-" if r["proxy_cpu_per_unit"] is None else "%.3f/%s" % (r["proxy_cpu_per_unit"], per),
            "-" if r["system_cpu_per_unit"] is None else "%.3f/%s" % (r["system_cpu_per_unit"], per),
            "-" if r.get("loss") is None else "%.2f%%" % (100 * r["loss"]),
            str(r["errors"]), "%d/%d" % (r["ok_runs"], r["runs"]),
        ))
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(hdr)]
    print("  ".join(h.ljust(w) for h, w in zip(hdr, widths)).rstrip(), file=out)
    prev = None
    for l in lines:
        if prev is not None and l[0] != prev:
            print("", file=out)
        prev = l[0]
        print("  ".join(v.ljust(w) for v, w in zip(l, widths)).rstrip(), file=out)
    print("", file=out)
    print("median of %s rounds; 'vs none' and 'vs go-mm' are ratios of medians (behind HAProxy: "
          "to HAProxy alone and to HAProxy+go-mmproxy); CPU per unit = CPU seconds during the "
          "measured interval / units moved (GB, or millions of messages, connections, packets)."
          % meta.get("rounds", "?"), file=out)
    bg = meta.get("background_busy_cpus")
    if bg is not None:
        print("before the run, %s of %s CPUs were busy with other work (system CPU above counts "
              "everything on the machine)." % (bg, meta.get("cpus", "?")), file=out)
    for s in skips:
        print("skipped %s / %s: %s" % (s["scenario"], s["config"], s["reason"]), file=out)


def machine_meta():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    git = "?"
    try:
        git = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.abspath(__file__))
                             ).stdout.strip() or "?"
    except OSError:
        pass
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "git": git,
    }


def plot(rows, order_s, order_c, meta, png):
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot not installed, no chart", file=sys.stderr)
        return
    cfgs = [c for c in order_c if c not in ("none", "haproxy")]
    if not cfgs:
        return
    by = {(r["scenario"], r["config"]): r for r in rows}
    n, gap, top = len(cfgs), 1, 1.0
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "bars.dat")
        with open(dat, "w") as f:
            f.write("scenario " + " ".join('"%s"' % c for c in cfgs) + "\n")
            for s in order_s:
                base = by.get((s, "none"))
                label = s
                if base and base["median"] is not None:
                    label += "\\n%s %s" % (fmt_num(base["median"]), base["unit"])
                vals = []
                for c in cfgs:
                    r = by.get((s, c))
                    if not r or r["vs_none"] is None:
                        vals.append("?")
                    else:
                        vals.append("%.4f" % r["vs_none"])
                        top = max(top, r["vs_none"])
                f.write('"%s" %s\n' % (label, " ".join(vals)))
        title = ("mmproxy-bpf benchmark: throughput relative to no proxy, median of %s rounds; "
                 "under each scenario its no-proxy throughput; no bar: skipped or failed (see the "
                 "table)\\n%s, kernel %s, %s CPUs, %s\\n%s" % (
                     meta.get("rounds", "?"), meta.get("host", "?"), meta.get("kernel", "?"),
                     meta.get("cpus", "?"), meta.get("date", "?"), meta.get("command", "")))
        gp = os.path.join(tmp, "plot.gp")
        with open(gp, "w") as f:
            f.write("""set terminal pngcairo size 1500,700 font "DejaVu Sans,11" noenhanced
set output "%s"
set title "%s" font ",12"
set style data histograms
set style histogram clustered gap %d
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile missing "?"
set yrange [0:%.2f]
set ylabel "throughput / no-proxy throughput"
set grid ytics
set key outside right top vertical
set bmargin 5
set xtics font ",10"
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb "#444444" front
set label "no proxy = 1.0" at graph 0.005, first 1 offset 0,0.6 left font ",9"
plot for [i=2:%d] "%s" using i:xtic(1) title columnheader(i), \\
     for [i=2:%d] "%s" skip 1 using ($0 + (i - 2 - (%d - 1) / 2.0) / (%d + %d)):(column(i)):(sprintf("%%.2f", column(i))) \\
         with labels offset 0,0.7 font ",9" notitle
""" % (png, title, gap, top * 1.15, n + 1, dat, n + 1, dat, n, n, gap))
        res = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
        if res.returncode:
            print("report.py: gnuplot failed: %s" % res.stderr.strip(), file=sys.stderr)


def last_line(path):
    runs = load_jsonl(path)
    if not runs:
        return
    run = runs[-1]
    head = "  %-11s %-26s r%d" % (run["scenario"], run["config"], run["round"])
    if not run.get("ok"):
        print("%s  FAILED: %s" % (head, run.get("error", "?")), file=sys.stderr)
        return
    r = run["result"]
    field, unit, scale, _ = scenario_info(run["scenario"], r)
    extra = ""
    if r.get("lat_us", {}).get("count"):
        extra += "  p50 %s us  p99 %s us" % (fmt_num(r["lat_us"]["p50"]), fmt_num(r["lat_us"]["p99"]))
    if r.get("tool") == "udpgen":
        extra += "  loss %.2f%%" % (100 * r["loss"])
    w = r.get("cpu_s", {}).get("watched")
    if w is not None:
        extra += "  proxy CPU %.2f s" % w
    if r.get("errors"):
        parts = ["%s %d" % (k, r[f]) for k, f in (
            ("connect", "connect_errors"), ("EOF", "io_eof"), ("reset", "io_reset"),
            ("I/O", "io_errors"), ("wrong bytes", "verify_errors"), ("bad", "bad"),
            ("send", "send_errors")) if r.get(f)]
        extra += "  ERRORS %d (%s)" % (r["errors"], ", ".join(parts))
    print("%s  %10s %-6s%s" % (head, fmt_num(r[field] * scale), unit, extra), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--line", metavar="RUNS")
    ap.add_argument("--raw", metavar="RUNS")
    ap.add_argument("--skips", metavar="SKIPS")
    ap.add_argument("--out", metavar="JSON")
    ap.add_argument("--png", metavar="PNG")
    ap.add_argument("--table", metavar="JSON")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()

    if a.line:
        last_line(a.line)
        return 0
    if a.table:
        with open(a.table) as f:
            doc = json.load(f)
        print_table(doc["summary"], doc.get("skipped", []), doc["meta"])
        return 0
    if not a.raw:
        ap.error("--raw, --line or --table is required")
    runs = load_jsonl(a.raw)
    skips = load_jsonl(a.skips)
    meta = machine_meta()
    for kv in a.meta:
        k, _, v = kv.partition("=")
        meta[k] = v
    rows, order_s, order_c = summarise(runs)
    doc = {
        "meta": meta,
        "scenarios": [{"name": s, "title": TITLES.get(s, s), "metric": scenario_info(s)[0],
                       "unit": scenario_info(s)[1]} for s in order_s],
        "configs": order_c,
        "summary": rows,
        "skipped": skips,
        "runs": runs,
    }
    print("")
    print_table(rows, skips, meta)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if a.png:
        plot(rows, order_s, order_c, meta, a.png)
    failed = [r for r in runs if not r.get("ok")]
    if failed:
        print("%d run(s) failed" % len(failed), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
