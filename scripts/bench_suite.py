#!/usr/bin/env python3
"""The workload suite, measured side by side in one run.

For each workload, the explicit-copy variant and the ADSM variant under each
protocol run in turn, `--runs` times, interleaved so that drift on the
machine hits all of them alike.  Per (workload, protocol): the median wall
time of the timed part, its ratio to the explicit variant's median, and the
bytes and faults from the runtime's statistics.  The results go to
bench/results/latest.json, and a chart of the ratios to ratios.svg.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

PROTOCOLS = ["batch", "lazy", "rolling", "delta"]


def run_one(exe, workload, variant, protocol, env_base, scratch):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        stats_path = f.name
    env = dict(env_base, ADSM_STATS="json:" + stats_path)
    if protocol:
        env["ADSM_PROTOCOL"] = protocol
    try:
        p = subprocess.run([exe, workload, variant, scratch], capture_output=True, text=True, env=env, timeout=300)
        if p.returncode != 0:
            sys.exit("bench: %s %s %s failed (%d):\n%s%s" % (workload, variant, protocol, p.returncode, p.stdout,
                                                             p.stderr))
        result = json.loads(p.stdout.strip().splitlines()[-1])
        totals = json.load(open(stats_path))["totals"]
    finally:
        os.unlink(stats_path)
    if not result["verified"]:
        sys.exit("bench: %s %s %s computed a wrong result" % (workload, variant, protocol))
    return result["seconds"], totals


def chart(results, protocols, path):
    """Grouped bars: time relative to the explicit variant, per workload and protocol."""
    names = list(results["workloads"].keys()) + ["geomean"]
    colors = {"batch": "#9e9e9e", "lazy": "#64b5f6", "rolling": "#1565c0", "delta": "#2e7d32"}
    values = {}
    for w in names[:-1]:
        for p in protocols:
            values[(w, p)] = results["workloads"][w]["protocols"][p]["ratio"]
    for p in protocols:
        values[("geomean", p)] = results["geomean_ratio"][p]
    top = max(2.0, math.ceil(max(values.values()) * 2) / 2)
    width, height, left, bottom, plot_h = 980, 480, 70, 90, 320
    group_w = (width - left - 20) / len(names)
    bar_w = group_w * 0.8 / len(protocols)

    def y(v):
        return bottom + plot_h - v / top * plot_h

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'
           % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="15" font-weight="bold">adsm workload suite: wall time relative to explicit '
           'copies (lower is better; 1.0 = hand-written)</text>' % left,
           '<text x="%d" y="44" fill="#555">%s</text>' % (left, results["setup"])]
    steps = int(top / 0.5)
    for i in range(steps + 1):
        v = i * 0.5
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (left, width - 20, y(v), y(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (left - 6, y(v) + 4, v))
    out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c62828" stroke-dasharray="5,3"/>'
               % (left, width - 20, y(1.0), y(1.0)))
    for gi, w in enumerate(names):
        gx = left + gi * group_w + group_w * 0.1
        for pi, p in enumerate(protocols):
            v = values[(w, p)]
            x = gx + pi * bar_w
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.3fx</title></rect>'
                       % (x, y(v), bar_w - 2, bottom + plot_h - y(v), colors.get(p, "#000"), w, p, v))
            out.append('<text x="%.1f" y="%.1f" font-size="9" text-anchor="middle">%.2f</text>'
                       % (x + bar_w / 2 - 1, y(v) - 3, v))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (gx + group_w * 0.4, bottom + plot_h + 18, w))
    lx = left
    for p in protocols:
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (lx, height - 28, colors.get(p, "#000")))
        out.append('<text x="%d" y="%d">%s</text>' % (lx + 16, height - 18, p))
        lx += 90
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build directory")
    ap.add_argument("--runs", type=int, default=5, help="runs per variant (median taken)")
    ap.add_argument("--gbps", default="12", help="simulated link bandwidth, GB/s (ADSM_SIM_LINK_GBPS)")
    ap.add_argument("--latency-us", default="10", help="simulated link latency (ADSM_SIM_LINK_LATENCY_US)")
    ap.add_argument("--launch-us", default="0", help="simulated kernel launch latency (ADSM_SIM_LAUNCH_US)")
    ap.add_argument("--sync-copy-us", default="0", help="simulated least synchronous copy time (ADSM_SIM_SYNC_COPY_US)")
    ap.add_argument("--preset", choices=["h100"], default=None,
                    help="the link and launch of a measured GPU: h100 is 55 GB/s, 2.7 us per asynchronous copy, "
                         "9.8 us per synchronous one, 9.7 us per launch")
    ap.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--out", default=None, help="results directory (default: bench/results)")
    args = ap.parse_args()
    if args.preset == "h100":
        args.gbps, args.latency_us, args.launch_us, args.sync_copy_us = "55", "2.7", "9.7", "9.8"

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.path.join(args.build, "tools", "adsm-workloads")
    out_dir = args.out or os.path.join(root, "bench", "results")
    os.makedirs(out_dir, exist_ok=True)
    protocols = args.protocols.split(",")
    listed = subprocess.run([exe, "--list"], capture_output=True, text=True, check=True).stdout.splitlines()
    workloads = [l.split()[0] for l in listed]
    if args.only:
        workloads = [w for w in workloads if w in args.only.split(",")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADSM_")}
    env.update(ADSM_DEVICE="sim", ADSM_SIM_LINK_GBPS=args.gbps, ADSM_SIM_LINK_LATENCY_US=args.latency_us,
               ADSM_SIM_LAUNCH_US=args.launch_us, ADSM_SIM_SYNC_COPY_US=args.sync_copy_us)
    scratch = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    setup = ("sim device, link %s GB/s + %s us, synchronous copies %s us at least, launch %s us, %d runs each "
             "(median), %d CPUs, %s" % (args.gbps, args.latency_us, args.sync_copy_us, args.launch_us, args.runs,
                                         os.cpu_count(), platform.release()))
    print("adsm bench:", setup)
    started = time.time()
    results = {"setup": setup, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "link_gbps": float(args.gbps),
               "link_latency_us": float(args.latency_us), "runs": args.runs, "workloads": {}}
    variants = [("explicit", None)] + [("adsm", p) for p in protocols]
    for w in workloads:
        times = {v: [] for v in variants}
        stats = {}
        for _ in range(args.runs):
            for v in variants:
                secs, totals = run_one(exe, w, v[0], v[1], env, scratch)
                times[v].append(secs)
                stats[v] = totals
        base = statistics.median(times[("explicit", None)])
        ex = stats[("explicit", None)]
        entry = {"explicit": {"seconds": base, "h2d_bytes": ex["h2d_bytes"], "d2h_bytes": ex["d2h_bytes"]},
                 "protocols": {}}
        line = "%-13s explicit %8.1f ms |" % (w, base * 1e3)
        for v in variants[1:]:
            t = stats[v]
            med = statistics.median(times[v])
            moved = t["h2d_bytes"] + t["d2h_bytes"]
            entry["protocols"][v[1]] = {
                "seconds": med, "ratio": med / base, "h2d_bytes": t["h2d_bytes"], "d2h_bytes": t["d2h_bytes"],
                "bytes_ratio": moved / max(1, ex["h2d_bytes"] + ex["d2h_bytes"]),
                "faults": t["read_faults"] + t["write_faults"], "all_seconds": times[v]}
            line += " %s %.3fx" % (v[1], med / base)
        entry["explicit"]["all_seconds"] = times[("explicit", None)]
        results["workloads"][w] = entry
        print(line, flush=True)
    results["geomean_ratio"] = {
        p: math.exp(sum(math.log(results["workloads"][w]["protocols"][p]["ratio"]) for w in workloads) / len(workloads))
        for p in protocols}
    results["elapsed_seconds"] = time.time() - started
    with open(os.path.join(out_dir, "latest.json"), "w") as f:
        json.dump(results, f, indent=2)
    chart(results, protocols, os.path.join(out_dir, "ratios.svg"))

    # The table the issue notes quote.
    print("\n%-13s %-8s %9s %7s %12s %12s %8s %8s" % ("workload", "protocol", "ms", "ratio", "h2d bytes", "d2h bytes",
                                                     "bytes x", "faults"))
    for w in workloads:
        e = results["workloads"][w]
        print("%-13s %-8s %9.1f %7s %12d %12d %8s %8s" % (w, "explicit", e["explicit"]["seconds"] * 1e3, "1.000",
                                                        e["explicit"]["h2d_bytes"], e["explicit"]["d2h_bytes"], "1.00", "-"))
        for p in protocols:
            q = e["protocols"][p]
            print("%-13s %-8s %9.1f %7.3f %12d %12d %8.2f %8d" % ("", p, q["seconds"] * 1e3, q["ratio"], q["h2d_bytes"],
                                                               q["d2h_bytes"], q["bytes_ratio"], q["faults"]))
    print("geometric mean of ratios: " + ", ".join("%s %.3f" % (p, results["geomean_ratio"][p]) for p in protocols))
    print("wrote %s/latest.json and ratios.svg in %.0f s" % (out_dir, results["elapsed_seconds"]))


if __name__ == "__main__":
    main()
