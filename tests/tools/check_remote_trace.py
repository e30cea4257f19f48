#!/usr/bin/env python3
"""The trace of a program run on a remote device (tests/tools/tool_app.c):
its kernels as the server ran them, and the transfers, on the timeline."""
import json
import sys

KERNELS = 3
events = json.load(open(sys.argv[1]))["traceEvents"]
kernels = [e for e in events if e.get("cat") == "kernel"]
transfers = [e for e in events if e.get("cat") == "transfer"]
problems = []
if len(kernels) != KERNELS or any(k["name"] != "add_one" for k in kernels):
    problems.append("expected %d add_one kernels, found %s" % (KERNELS, [k["name"] for k in kernels]))
if any(k["dur"] <= 0 or k["args"].get("failed") for k in kernels):
    problems.append("a kernel without a duration, or failed")
if not transfers:
    problems.append("no transfers")
# The kernels ran one after another, each between its call's start and the end of the run.
starts = sorted(k["ts"] for k in kernels)
calls = sorted(e["ts"] for e in events if e.get("cat") == "call")
if len(calls) == KERNELS and any(s < c for s, c in zip(starts, calls)):
    problems.append("a kernel starts before its call: %s vs %s" % (starts, calls))
for p in problems:
    print("FAIL:", p)
print("remote trace: %d kernels, %d transfers%s" % (len(kernels), len(transfers), "" if problems else ": ok"))
sys.exit(1 if problems else 0)
