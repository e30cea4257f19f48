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
predicted/measured, and the largest factor either way).
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


if __name__ == "__main__":
    main()
