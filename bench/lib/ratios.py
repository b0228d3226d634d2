#!/usr/bin/env python3
"""Read measure.py lines (one case per 'case NAME' line) and print medians and iolab/peer ratios."""
import json, statistics, sys

cases, order, cur = {}, [], None
for line in sys.stdin:
    line = line.strip()
    if line.startswith("case "):
        cur = line[5:]
        order.append(cur)
        cases[cur] = {}
        continue
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    if "error" in d:
        print(f"  {cur}: ERROR {d['error']}", file=sys.stderr)
        continue
    cases[cur].setdefault(d["tool"], []).append(d)

def med(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None]
    return statistics.median(v) if v else float("nan")

print(f"{'case':44} {'figure':>9} {'iolab':>12} {'peer':>12} {'ratio':>7} {'cpu/IO iolab':>13} {'cpu/IO peer':>12} {'cpu ratio':>9}")
for c in order:
    tools = cases[c]
    peer = [t for t in tools if t != "iolab"]
    if "iolab" not in tools or not peer:
        continue
    p = peer[0]
    fig = "mbps" if c.startswith(("seq", "1m")) else "iops"
    if "null" in c:
        fig = "ios_per_cpu_s"
    a, b = med(tools["iolab"], fig), med(tools[p], fig)
    ca, cb = med(tools["iolab"], "cpu_us_per_io"), med(tools[p], "cpu_us_per_io")
    n = min(len(tools["iolab"]), len(tools[p]))
    print(f"{c:44} {fig:>9} {a:12.1f} {b:12.1f} {a/b:7.3f} {ca:11.3f}us {cb:10.3f}us {ca/cb:9.3f}   ({p}, {n} pairs)")
