#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Table of bench/field.sh results: per load and configuration the median
and range over rounds, and the median's ratio to no proxy's median.
usage: field_report.py RESULTS.jsonl [MORE.jsonl ...]"""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
byround = {}  # (file, load, round) -> {config: value}: ratios within a round
extra = defaultdict(list)
units = {}  # load -> unit (latency: us, lower is better)
order = []
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        key = (r["load"], r["config"])
        if key not in order:
            order.append(key)
        units.setdefault(r["load"], r.get("unit") or "")
        if r["value"] is not None:
            runs[key].append(r["value"])
            byround.setdefault((path, r["load"], r["round"]), {})[r["config"]] = r["value"]
        if r.get("tc_flows_1s") is not None:
            extra[key].append("%s/%s/%s/%s" % (r.get("tc_flows_1s"), r.get("tc_within_1s", "-"), r["flows_handed"],
                                               r["aborted"]))

print("| load | configuration | median | range | ratio to no proxy | ratio in each round | tc: in kernel at 1.5 s / within 1 s of their accept / flows handed off / aborted hand-offs |")
print("|---|---|---|---|---|---|---|")
for load, cfg in order:
    v = runs[(load, cfg)]
    base = runs.get((load, "none"))
    if not v:
        print("| %s | %s | — | — | — | — | |" % (load, cfg))
        continue
    med = statistics.median(v)
    ratio = "%.2f" % (med / statistics.median(base)) if base else "—"
    rng = "%.0f–%.0f" % (min(v), max(v))
    per = ["%.2f" % (d[cfg] / d["none"]) for (f, l, _), d in sorted(byround.items())
           if l == load and cfg in d and d.get("none")]
    if units.get(load) == "us":
        med_s, rng = "%.1f" % med, "%.1f–%.1f" % (min(v), max(v))
    else:
        med_s = "%.0f" % med
    print("| %s | %s | %s | %s | %s | %s | %s |" % (load, cfg, med_s, rng, ratio, " ".join(per),
                                                   ", ".join(extra[(load, cfg)])))

# Ratios at a glance: one row per load, the median's ratio (in parentheses
# the lowest and highest round's value over no proxy's median) per configuration.
cfgs = []
for _, c in order:
    if c not in cfgs:
        cfgs.append(c)
loads = []
for l, _ in order:
    if l not in loads:
        loads.append(l)
print()
print("| load | no proxy | " + " | ".join(c for c in cfgs if c != "none") + " |")
print("|---|---|" + "---|" * (len(cfgs) - 1))
for l in loads:
    base = runs.get((l, "none"))
    if not base:
        continue
    b = statistics.median(base)
    unit = {"Mbps": "Mbit/s"}.get(units.get(l), units.get(l))
    cells = [("%.1f %s (lower is better)" if unit == "us" else "%.0f %s") % (b, unit)]
    for c in cfgs:
        if c == "none":
            continue
        v = runs.get((l, c))
        cells.append("%.2f (%.2f–%.2f)" % (statistics.median(v) / b, min(v) / b, max(v) / b) if v else "—")
    print("| %s | %s |" % (l, " | ".join(cells)))
