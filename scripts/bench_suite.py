#!/usr/bin/env python3
"""The workload suite, measured side by side in one run.

For each workload, the hand-written baseline, the other baselines of the
device and the ADSM variant under each protocol run in turn, `--runs` times,
interleaved so that drift on the machine hits all of them alike.  Per
(workload, variant): the median wall time of the timed part, its ratio to
the baseline's median, and the bytes and faults from the runtime's
statistics.

  --device sim (default): adsm-workloads on the simulated GPU; the baseline
      is explicit copies.  Writes bench/results/latest.json and ratios.svg.
  --device cuda: adsm-workloads-cuda on an NVIDIA GPU; the baseline is
      explicit copies from pinned buffers, beside pageable buffers and managed
      memory.  Writes bench/results/cuda.json and cuda.svg.
  --device remote: adsm-workloads on a remote device, served by an
      adsm-device-server started here on loopback with the workloads' kernels
      (libadsm-workload-kernels.so); the baseline is explicit copies to the
      same remote device.  Writes bench/results/remote.json and remote.svg.
  --device remote-cuda: adsm-workloads-cuda on a remote GPU, an
      adsm-device-server on loopback hosting this machine's NVIDIA GPU
      (--device cuda; the kernels' module goes to it); the baseline is
      explicit copies to that remote GPU, beside explicit copies from pinned
      buffers on the same GPU reached directly.  Writes
      bench/results/remote-cuda.json and remote-cuda.svg.

A protocol in --protocols may carry runtime settings after colons, so that
settings are compared side by side in one run as protocols are:
`--protocols delta,delta:ADSM_TRACKER=mprotect`.
"""
import argparse
import atexit
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROTOCOLS = ["batch", "lazy", "rolling", "delta"]
# Where the runtime's time went, from its statistics (the X_ns counters),
# reported per variant in milliseconds (medians over the runs).  They
# overlap (a fault that pins counts in both), and `memory` counts the frees
# the timed part leaves out.  `prefault` is a GPU's helpers making host pages
# before they are pinned; the simulated device makes them inside faults and
# copies instead.  `kernel` is the simulated device's kernels, which run on
# the CPU inside calls or syncs.
TIME_PARTS = ["memory", "fault", "pin", "prefault", "call", "sync", "tracking", "kernel"]


def run_one(exe, module, scale, workload, variant, protocol, env_base, scratch):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        stats_path = f.name
    env = dict(env_base, ADSM_STATS="json:" + stats_path)
    if protocol:
        name, *settings = protocol.split(":")
        env["ADSM_PROTOCOL"] = name
        for setting in settings:
            var, eq, value = setting.partition("=")
            if not eq or not var.startswith("ADSM_"):
                sys.exit("bench: '%s' in protocol '%s' is not ADSM_NAME=VALUE" % (setting, protocol))
            env[var] = value
    cmd = [exe] + (["--module", module] if module else []) + (["--scale", str(scale)] if scale != 1 else []) + \
        [workload, variant, scratch]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        if p.returncode != 0:
            sys.exit("bench: %s %s %s failed (%d):\n%s%s" % (workload, variant, protocol, p.returncode, p.stdout,
                                                             p.stderr))
        result = json.loads(p.stdout.strip().splitlines()[-1])
        # A variant that never starts the runtime (CUDA's own) writes no statistics.
        with open(stats_path) as f:
            text = f.read()
        totals = json.loads(text)["totals"] if text.strip() else None
    finally:
        os.unlink(stats_path)
    if not result["verified"]:
        sys.exit("bench: %s %s %s computed a wrong result" % (workload, variant, protocol))
    return result["seconds"], totals


def chart(results, series, path):
    """Grouped bars: time relative to the baseline, per workload and variant."""
    names = list(results["workloads"].keys()) + ["geomean"]
    colors = {"pinned": "#8e24aa", "batch": "#9e9e9e", "lazy": "#64b5f6", "rolling": "#1565c0", "delta": "#2e7d32",
              "pageable": "#ffb74d", "managed": "#e65100"}
    values = {}
    for w in names[:-1]:
        for p in series:
            values[(w, p)] = results["workloads"][w]["variants"][p]["ratio"]
    for p in series:
        values[("geomean", p)] = results["geomean_ratio"][p]
    top = max(2.0, math.ceil(max(values.values()) * 2) / 2)
    width, height, left, bottom, plot_h = 980, 480, 70, 90, 320
    group_w = (width - left - 20) / len(names)
    bar_w = group_w * 0.8 / len(series)

    def y(v):
        return bottom + plot_h - v / top * plot_h

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'
           % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="15" font-weight="bold">adsm workload suite: wall time relative to %s '
           '(lower is better; 1.0 = hand-written)</text>' % (left, results["baseline_what"]),
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
        for pi, p in enumerate(series):
            v = values[(w, p)]
            x = gx + pi * bar_w
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.3fx</title></rect>'
                       % (x, y(v), bar_w - 2, bottom + plot_h - y(v), colors.get(p, "#000"), w, p, v))
            out.append('<text x="%.1f" y="%.1f" font-size="9" text-anchor="middle">%.2f</text>'
                       % (x + bar_w / 2 - 1, y(v) - 3, v))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (gx + group_w * 0.4, bottom + plot_h + 18, w))
    lx = left
    for p in series:
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (lx, height - 28, colors.get(p, "#000")))
        out.append('<text x="%d" y="%d">%s</text>' % (lx + 16, height - 18, p))
        lx += 100
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


DEVICES = {
    # exe, baseline variant, its description, other baselines, results file stem
    "sim": ("adsm-workloads", "explicit", "explicit copies", [], "latest"),
    "cuda": ("adsm-workloads-cuda", "pinned", "explicit copies from pinned buffers", ["pageable", "managed"], "cuda"),
    "remote": ("adsm-workloads", "explicit", "explicit copies", [], "remote"),
    "remote-cuda": ("adsm-workloads-cuda", "explicit", "explicit copies to the same remote GPU", ["pinned"],
                    "remote-cuda"),
}


def gpu_name():
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip() if shutil.which("nvidia-smi") else ""
    return gpu.splitlines()[0] if gpu else "no nvidia-smi"


class DeviceServer:
    """adsm-device-server on loopback with the workloads' kernels, for --device remote (and remote-cuda:
    hosting this machine's GPU)."""

    def __init__(self, build, hosted=None):
        server = os.path.join(build, "tools", "adsm-device-server")
        kernels = os.path.join(build, "tools", "libadsm-workload-kernels.so")
        if not os.access(server, os.X_OK) or not os.path.exists(kernels):
            sys.exit("bench: the device server or the workloads' kernels were not built (libfabric-dev?)")
        self.dir = tempfile.mkdtemp()
        self.key = os.path.join(self.dir, "key")
        with open(os.open(self.key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([server, "--key", self.key, "--address", "127.0.0.1", "--port", "0",
                                      "--memory", "2G", "--kernels", kernels] +
                                     (["--device", hosted] if hosted else []), stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on"):
            self.log.flush()
            with open(os.path.join(self.dir, "log")) as f:
                said = f.read()
            self.stop()
            sys.exit("bench: the device server did not start: " + said)
        self.port = line.strip().rsplit(":", 1)[1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build directory")
    ap.add_argument("--device", choices=sorted(DEVICES), default="sim", help="where the kernels run (default sim)")
    ap.add_argument("--module", default=None,
                    help="cuda: the kernels' module (default: the fatbin built with adsm-workloads-cuda; "
                         "driver-double for the tests' CUDA driver double)")
    ap.add_argument("--runs", type=int, default=5, help="runs per variant (median taken)")
    ap.add_argument("--scale", type=float, default=1,
                    help="the workloads' sizes as a fraction of the full ones (default 1; the test suite "
                         "checks them smaller, and ratios measured so are not the workloads')")
    ap.add_argument("--gbps", default="12", help="sim: link bandwidth, GB/s (ADSM_SIM_LINK_GBPS)")
    ap.add_argument("--latency-us", default="10", help="sim: link latency (ADSM_SIM_LINK_LATENCY_US)")
    ap.add_argument("--launch-us", default="0", help="sim: kernel launch latency (ADSM_SIM_LAUNCH_US)")
    ap.add_argument("--sync-copy-us", default="0", help="sim: least synchronous copy time (ADSM_SIM_SYNC_COPY_US)")
    ap.add_argument("--pin-us-per-mib", default="0",
                    help="sim: time charged per MiB of host mirror pinned at first use (ADSM_SIM_PIN_US_PER_MIB)")
    ap.add_argument("--preset", choices=["h100"], default=None,
                    help="sim: the link, launch and pinning of a measured GPU: h100 is 55 GB/s, 2.7 us per "
                         "asynchronous copy, 9.8 us per synchronous one, 9.7 us per launch, 75 us per MiB pinned")
    ap.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--out", default=None, help="results directory (default: bench/results)")
    args = ap.parse_args()
    if not 0 < args.scale <= 1:
        sys.exit("bench: --scale takes a fraction in (0, 1], not %g" % args.scale)
    if args.preset == "h100":
        args.gbps, args.latency_us, args.launch_us, args.sync_copy_us = "55", "2.7", "9.7", "9.8"
        args.pin_us_per_mib = "75"
    exe_name, baseline, baseline_what, others, stem = DEVICES[args.device]

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.path.join(args.build, "tools", exe_name)
    if not os.access(exe, os.X_OK):
        sys.exit("bench: %s was not built (for cuda: CMake needs nvcc and the CUDA toolkit)" % exe)
    out_dir = args.out or os.path.join(root, "bench", "results")
    os.makedirs(out_dir, exist_ok=True)
    protocols = args.protocols.split(",")
    listed = subprocess.run([exe, "--list"], capture_output=True, text=True, check=True).stdout.splitlines()
    workloads = [l.split()[0] for l in listed]
    if args.only:
        workloads = [w for w in workloads if w in args.only.split(",")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADSM_")}
    if args.device == "sim":
        env.update(ADSM_DEVICE="sim", ADSM_SIM_LINK_GBPS=args.gbps, ADSM_SIM_LINK_LATENCY_US=args.latency_us,
                   ADSM_SIM_LAUNCH_US=args.launch_us, ADSM_SIM_SYNC_COPY_US=args.sync_copy_us,
                   ADSM_SIM_PIN_US_PER_MIB=args.pin_us_per_mib)
        setup = ("sim device, link %s GB/s + %s us, synchronous copies %s us at least, launch %s us, "
                 "pinning %s us per MiB" % (args.gbps, args.latency_us, args.sync_copy_us, args.launch_us,
                                             args.pin_us_per_mib))
    elif args.device in ("remote", "remote-cuda"):
        gpu = args.device == "remote-cuda"
        server = DeviceServer(args.build, "cuda" if gpu else None)
        atexit.register(server.stop)
        env.update(ADSM_DEVICE="remote", ADSM_REMOTE="127.0.0.1:" + server.port, ADSM_REMOTE_KEY=server.key)
        if gpu:
            env.update(ADSM_GPU_APIS="off")  # CUDA's own variant (pinned) reaches the GPU directly
        setup = "remote device (adsm-device-server on loopback, tcp%s)" % (", hosting %s" % gpu_name() if gpu else "")
    else:
        # CUDA's own variants reach the driver directly, the adsm one through the cuda device.
        env.update(ADSM_DEVICE="cuda", ADSM_GPU_APIS="off")
        setup = "cuda device (%s)" % gpu_name()
    # A directory of this run's own: two suites at once (CTest runs the sim
    # and remote ones side by side) must not share input files.
    scratch = tempfile.mkdtemp(prefix="adsm-bench-",
                               dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir())
    atexit.register(shutil.rmtree, scratch, True)
    setup += ", %d runs each (median), %d CPUs, %s" % (args.runs, os.cpu_count(), platform.release())
    if args.scale != 1:
        setup += ", workloads at %g of their sizes" % args.scale
    print("adsm bench:", setup)
    started = time.time()
    results = {"setup": setup, "device": args.device, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
               "baseline": baseline, "baseline_what": baseline_what, "runs": args.runs, "scale": args.scale,
               "workloads": {}}
    if args.device == "sim":
        results.update(link_gbps=float(args.gbps), link_latency_us=float(args.latency_us))
    variants = [(baseline, None)] + [(o, None) for o in others] + [("adsm", p) for p in protocols]
    series = others + protocols

    def key(v):
        return v[1] or v[0]

    for w in workloads:
        times = {v: [] for v in variants}
        stats = {}
        parts = {v: [] for v in variants}
        # The time each run spent outside the device's kernels (sim counts
        # its kernels' time: Counter::kernel_ns).
        outside = {v: [] for v in variants}
        for _ in range(args.runs):
            for v in variants:
                secs, totals = run_one(exe, args.module, args.scale, w, v[0], v[1], env, scratch)
                times[v].append(secs)
                stats[v] = totals
                if totals:
                    parts[v].append({k: totals.get(k + "_ns", 0) / 1e6 for k in TIME_PARTS})
                    if totals.get("kernel_ns"):
                        outside[v].append(secs - totals["kernel_ns"] / 1e9)
        base = statistics.median(times[variants[0]])
        base_outside = statistics.median(outside[variants[0]]) if outside[variants[0]] else None
        ex = stats[variants[0]]
        ex_moved = ex["h2d_bytes"] + ex["d2h_bytes"] if ex else 0
        entry = {"baseline": {"variant": baseline, "seconds": base, "h2d_bytes": ex and ex["h2d_bytes"],
                              "d2h_bytes": ex and ex["d2h_bytes"], "all_seconds": times[variants[0]],
                              "seconds_outside_kernels": base_outside},
                 "variants": {}}
        line = "%-13s %s %8.1f ms |" % (w, baseline, base * 1e3)
        for v in variants[1:]:
            t = stats[v]
            med = statistics.median(times[v])
            # Bytes and faults as the runtime counted them (none for CUDA's own variants).
            entry["variants"][key(v)] = {
                "seconds": med, "ratio": med / base, "h2d_bytes": t and t["h2d_bytes"],
                "d2h_bytes": t and t["d2h_bytes"],
                "bytes_ratio": (t["h2d_bytes"] + t["d2h_bytes"]) / ex_moved if t and ex_moved else None,
                "faults": t and t["read_faults"] + t["write_faults"], "all_seconds": times[v],
                "ms_in": {k: statistics.median(p[k] for p in parts[v]) for k in TIME_PARTS} if parts[v] else None}
            if outside[v] and base_outside and base_outside > 0:
                # As on a device whose kernels take no time: what a GPU
                # shows when its kernels are short next to the transfers.
                mid = statistics.median(outside[v])
                entry["variants"][key(v)].update(seconds_outside_kernels=mid, ratio_outside_kernels=mid / base_outside)
            line += " %s %.3fx" % (key(v), med / base)
        results["workloads"][w] = entry
        print(line, flush=True)
    results["geomean_ratio"] = {
        p: math.exp(sum(math.log(results["workloads"][w]["variants"][p]["ratio"]) for w in workloads) / len(workloads))
        for p in series}
    best = min(protocols, key=lambda p: results["geomean_ratio"][p])
    results["best_protocol"] = {
        "protocol": best, "geomean_ratio": results["geomean_ratio"][best],
        "max_ratio": max(results["workloads"][w]["variants"][best]["ratio"] for w in workloads)}
    if "managed" in series:
        results["best_protocol"]["speedup_over_managed"] = results["geomean_ratio"]["managed"] / \
            results["geomean_ratio"][best]
    # Where the device counted its kernels' time (sim): the ratios as on a
    # device whose kernels take none.
    outside = [p for p in series if all("ratio_outside_kernels" in results["workloads"][w]["variants"][p]
                                        for w in workloads)]
    if outside:
        results["geomean_ratio_outside_kernels"] = {
            p: math.exp(sum(math.log(results["workloads"][w]["variants"][p]["ratio_outside_kernels"])
                            for w in workloads) / len(workloads)) for p in outside}
    results["elapsed_seconds"] = time.time() - started
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump(results, f, indent=2)
    chart_name = "ratios.svg" if args.device == "sim" else stem + ".svg"
    chart(results, series, os.path.join(out_dir, chart_name))

    # The table the issue notes quote.
    print("\n%-13s %-8s %9s %7s %12s %12s %8s %8s" % ("workload", "variant", "ms", "ratio", "h2d bytes", "d2h bytes",
                                                     "bytes x", "faults"))
    def cell(v, fmt):
        return "-" if v is None else fmt % v

    for w in workloads:
        e = results["workloads"][w]
        b = e["baseline"]
        print("%-13s %-8s %9.1f %7s %12s %12s %8s %8s" % (w, baseline, b["seconds"] * 1e3, "1.000",
                                                        cell(b["h2d_bytes"], "%d"), cell(b["d2h_bytes"], "%d"),
                                                        "1.00" if b["h2d_bytes"] is not None else "-", "-"))
        for p in series:
            q = e["variants"][p]
            print("%-13s %-8s %9.1f %7.3f %12s %12s %8s %8s" % ("", p, q["seconds"] * 1e3, q["ratio"],
                                                              cell(q["h2d_bytes"], "%d"), cell(q["d2h_bytes"], "%d"),
                                                              cell(q["bytes_ratio"], "%.2f"), cell(q["faults"], "%d")))
    print("\nwhere the runtime's time went (ms, medians; a part may hold another: a fault that pins counts in both)")
    print("%-13s %-8s %9s " % ("workload", "variant", "ms") + " ".join("%9s" % k for k in TIME_PARTS))
    for w in workloads:
        for p in protocols:
            q = results["workloads"][w]["variants"][p]
            if q["ms_in"]:
                print("%-13s %-8s %9.1f " % (w, p, q["seconds"] * 1e3) + " ".join("%9.2f" % q["ms_in"][k]
                                                                                 for k in TIME_PARTS))
    print("geometric mean of ratios: " + ", ".join("%s %.3f" % (p, results["geomean_ratio"][p]) for p in series))
    if outside:
        print("\ntime outside the device's kernels, relative to %s's (what a GPU whose kernels are short shows)"
              % baseline)
        print("%-13s " % "workload" + " ".join("%9s" % p for p in outside))
        for w in workloads:
            print("%-13s " % w + " ".join("%9.3f" % results["workloads"][w]["variants"][p]["ratio_outside_kernels"]
                                          for p in outside))
        print("%-13s " % "geomean" + " ".join("%9.3f" % results["geomean_ratio_outside_kernels"][p] for p in outside))
    b = results["best_protocol"]
    print("best protocol: %s, %.3fx %s in geometric mean, %.3fx at most%s"
          % (best, b["geomean_ratio"], baseline_what, b["max_ratio"],
             "; managed memory takes %.2fx its time" % b["speedup_over_managed"] if "speedup_over_managed" in b else ""))
    print("wrote %s/%s.json and %s in %.0f s" % (out_dir, stem, chart_name, results["elapsed_seconds"]))


if __name__ == "__main__":
    main()
