#!/usr/bin/env python3
"""Run one benchmark command, print one JSON line: the tool's figure and the CPU it used.

usage: measure.py TOOL METRIC -- CMD...
  TOOL   fio | iolab | iolab-peer | bonnie | dd   (how to read the figure from the command's stdout)
  METRIC iops | mbps | raw
The CPU time is the child's user+sys from rusage, so both tools are measured the same way.
"""
import json, resource, subprocess, sys, time

def main():
    tool, metric = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        print(json.dumps({"error": p.stderr.strip()[-400:], "cmd": cmd}))
        sys.exit(1)
    # Children's peak RSS: this process has exactly one child, so it is that child's (KiB).
    out = {"tool": tool, "cpu_s": cpu, "wall_s": wall, "maxrss_kib": r1.ru_maxrss}
    if tool == "fio":
        d = json.loads(p.stdout[p.stdout.index("{"):])
        j = d["jobs"][0]
        rd, wr = j["read"], j["write"]
        out["iops"] = rd["iops"] + wr["iops"]
        out["mbps"] = (rd["bw_bytes"] + wr["bw_bytes"]) / 1e6
        out["ios"] = rd["total_ios"] + wr["total_ios"]
    elif tool.startswith("iolab"):  # iolab, or iolab-peer (another build, for A/B)
        d = json.loads(p.stdout)
        # The workload itself, not --verify's fill and read-back passes ("name:verify-...").
        s = next(w for w in d["summary"] if ":" not in w["workload"])
        ops = [o for o in s["ops"] if o["op"] != "sync"]
        out["iops"] = sum(o["ops_per_sec_median"] for o in ops)
        out["mbps"] = sum(o["mb_per_sec_median"] for o in ops)
        out["ios"] = sum(t["accounting"]["completed"] for w in d["run"]["workloads"] for t in w["trials"])
    else:
        out["stdout"] = p.stdout
    if out.get("ios"):
        out["cpu_us_per_io"] = cpu * 1e6 / out["ios"]
        out["ios_per_cpu_s"] = out["ios"] / cpu if cpu > 0 else None
    print(json.dumps(out))

main()
