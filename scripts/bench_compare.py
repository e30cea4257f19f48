#!/usr/bin/env python3
"""How well a simulated run of the workload suite predicts a GPU's.

  bench_compare.py SIMULATED.json MEASURED.json

SIMULATED is `scripts/bench --preset h100` (bench/results/latest.json): the
simulated device with the GPU's link and launch, whose kernels run on the
CPU; its ratios outside the kernels (the time the runtime and the copies
take, as on a GPU whose kernels are short) are the prediction.  MEASURED is
`scripts/bench --device cuda` (bench/results/cuda.json).  Prints, per
workload and protocol, the predicted ratio to the explicit copies, the
simulated one with the kernels in, and the measured one; then per protocol
the geometric means and how far the prediction is off (the geometric mean of
predicted/measured, and the largest factor either way).  Last, for each
workload and protocol predicted more than 15% off, where the runtime's time
went on each device (from the statistics: faults, pinning, a GPU's page
making ahead of pinning, calls and syncs, allocation), each part in units of
that device's explicit copies' time, to show which part the simulation gets
wrong.
"""
import json
import math
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        sim = json.load(f)
    with open(sys.argv[2]) as f:
        gpu = json.load(f)
    if sim.get("device") != "sim":
        sys.exit("bench_compare: %s is not a run on the simulated device" % sys.argv[1])
    workloads = [w for w in sim["workloads"] if w in gpu["workloads"]]
    protocols = [p for p in ("batch", "lazy", "rolling", "delta")
                 if all(p in sim["workloads"][w]["variants"] and p in gpu["workloads"][w]["variants"]
                        for w in workloads)]
    missing = [w for w in workloads for p in protocols
               if "ratio_outside_kernels" not in sim["workloads"][w]["variants"][p]]
    if not workloads or not protocols:
        sys.exit("bench_compare: the two runs share no workload and protocol")
    if missing:
        sys.exit("bench_compare: %s has no time outside the kernels (a run before Counter::kernel_ns?)" % sys.argv[1])
    print("simulated: %s\nmeasured:  %s" % (sim["setup"], gpu["setup"]))
    print("ratio to the explicit copies: predicted (simulated, outside kernels) / simulated whole / measured")
    print("%-13s " % "workload" + " ".join("%23s" % p for p in protocols))
    errors = {p: [] for p in protocols}
    geo = {p: [[], [], []] for p in protocols}
    for w in workloads:
        cells = []
        for p in protocols:
            s = sim["workloads"][w]["variants"][p]
            predicted, whole, measured = s["ratio_outside_kernels"], s["ratio"], gpu["workloads"][w]["variants"][p]["ratio"]
            cells.append("%6.2f / %5.2f / %5.2f" % (predicted, whole, measured))
            errors[p].append(math.log(predicted / measured))
            for g, v in zip(geo[p], (predicted, whole, measured)):
                g.append(math.log(v))
        print("%-13s " % w + " ".join("%23s" % c for c in cells))
    print("%-13s " % "geomean" + " ".join(
        "%23s" % ("%6.2f / %5.2f / %5.2f" % tuple(math.exp(sum(g) / len(g)) for g in geo[p])) for p in protocols))
    for p in protocols:
        e = errors[p]
        print("%-8s predicted/measured: %.2f in geometric mean, %.2f to %.2f per workload"
              % (p, math.exp(sum(e) / len(e)), math.exp(min(e)), math.exp(max(e))))
    print_parts(sim, gpu, workloads, protocols, errors)


OFF_BY = 1.15
# (Calls and syncs together: the simulated kernels run inside one or the
# other, and are taken out of their sum.)
PARTS = ["fault", "pin", "prefault", "call+sync", "memory"]


def part(ms_in, k, simulated):
    """Milliseconds in part k, or None where the run does not count it."""
    if k != "call+sync":
        return ms_in.get(k)
    if "call" not in ms_in or "sync" not in ms_in or (simulated and "kernel" not in ms_in):
        return None  # (a simulated run before bench_suite.py kept the kernels' time)
    return ms_in["call"] + ms_in["sync"] - (ms_in["kernel"] if simulated else 0)


def print_parts(sim, gpu, workloads, protocols, errors):
    """The breakdown of the pairs predicted more than OFF_BY off, each part
    as a share of its device's explicit copies' time (the simulated one
    outside its kernels), so that the two devices' columns add up to their
    ratios and compare."""
    rows = []
    for i, w in enumerate(workloads):
        for p in protocols:
            if abs(errors[p][i]) <= math.log(OFF_BY):
                continue
            s, g = sim["workloads"][w]["variants"][p], gpu["workloads"][w]["variants"][p]
            if s.get("ms_in") and g.get("ms_in"):
                rows.append((w, p, s, g))
    if not rows:
        return
    print("\nwhere the time went, predicted more than %d%% off: each part in units of the explicit copies' time "
          "(simulated, its kernels left out / measured; - where a device does not count it)"
          % round((OFF_BY - 1) * 100))
    print("%-13s %-8s %13s " % ("workload", "protocol", "ratio") + " ".join("%13s" % k for k in PARTS))
    for w, p, s, g in rows:
        base_s = sim["workloads"][w]["baseline"]["seconds_outside_kernels"] * 1e3
        base_g = gpu["workloads"][w]["baseline"]["seconds"] * 1e3
        cells = []
        for k in PARTS:
            a, b = part(s["ms_in"], k, True), part(g["ms_in"], k, False)
            cells.append("%13s" % ("-" if a is None and b is None else "%5s / %5s" % (
                "-" if a is None else "%.2f" % (a / base_s), "-" if b is None else "%.2f" % (b / base_g))))
        print("%-13s %-8s %5.2f / %5.2f " % (w, p, s["ratio_outside_kernels"], g["ratio"]) + " ".join(cells))


if __name__ == "__main__":
    main()
