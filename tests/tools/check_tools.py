#!/usr/bin/env python3
"""Checks the launcher, the JSON statistics, the trace and the profile on a
known program (tool_app.c) run through adsm-run."""
import json
import os
import subprocess
import sys
import tempfile

RUN, APP = sys.argv[1], sys.argv[2]
KERNELS = 3
MIB4 = 4 << 20
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(args, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADSM_")}
    env.update(kw.pop("env", {}))
    return subprocess.run([RUN] + args, capture_output=True, text=True, timeout=120, env=env, **kw)


with tempfile.TemporaryDirectory() as tmp:
    stats_path = os.path.join(tmp, "stats.json")
    trace_path = os.path.join(tmp, "trace.json")
    scratch = os.path.join(tmp, "scratch")

    # ---- the launcher: rejections name what is wrong; the exit status passes through
    r = run(["--no-such-option", "--", "true"])
    check(r.returncode == 125 and "--no-such-option" in r.stderr, "unknown option is rejected by name")
    r = run(["--block-size", "3K", "--", "true"])
    check(r.returncode == 125 and "ADSM_BLOCK_SIZE" in r.stderr and "3K" in r.stderr, "bad block size is named")
    r = run(["--protocol", "nope", "--", "true"])
    check(r.returncode == 125 and "nope" in r.stderr, "unknown protocol is named")
    r = run(["--", "true"], env={"ADSM_ON_RACE": "explode"})
    check(r.returncode == 125 and "ADSM_ON_RACE" in r.stderr, "a bad variable in the environment is named")
    r = run(["--trace"])
    check(r.returncode == 125 and "needs a value" in r.stderr, "an option without its value is rejected")
    r = run(["--trace", "/nonexistent-dir/t.json", "--", "true"])
    check(r.returncode == 125 and "/nonexistent-dir/t.json" in r.stderr, "an unwritable trace file is named")
    r = run(["--", "sh", "-c", "exit 7"])
    check(r.returncode == 7, "the program's exit status passes through")
    r = run(["--help"])
    check(r.returncode == 0, "--help succeeds")
    for var in ("ADSM_PROTOCOL", "ADSM_BLOCK_SIZE", "ADSM_DEVICE", "ADSM_STATS", "ADSM_TRACE", "ADSM_PROFILE",
                "ADSM_MALLOC_THRESHOLD", "ADSM_SIM_LINK_GBPS"):
        check(var in r.stdout, "--help documents " + var)
    for opt in ("--protocol", "--block-size", "--device", "--stats", "--trace", "--profile"):
        check(opt in r.stdout, "--help documents " + opt)

    # ---- one run with everything on
    r = run(["--protocol", "rolling", "--block-size", "64K", "--stats=json:" + stats_path, "--trace", trace_path,
             "--profile=5", "--", APP, scratch])
    print(r.stdout, r.stderr, sep="\n")
    check(r.returncode == 0 and "tool_app: sum" in r.stdout, "the program runs under adsm-run and verifies")

    # statistics
    stats = json.load(open(stats_path))
    t = stats["totals"]
    check(stats["protocol"] == "rolling" and stats["block_size"] == str(64 << 10), "statistics name the configuration")
    check(t["kernels"] == KERNELS and t["syncs"] == KERNELS, "statistics count the kernels and syncs")
    check(t["allocs"] == 2 and t["frees"] == 2, "statistics count allocations and frees")
    check(t["io_calls"] >= 2 and t["io_bytes"] >= 2 * MIB4, "statistics count the I/O on shared memory")
    check(t["h2d_bytes"] >= MIB4 and t["d2h_bytes"] >= KERNELS * MIB4, "statistics count bytes each way")
    check(t["read_faults"] >= KERNELS, "statistics count the read faults of the CPU's sums")
    check(t["call_ns"] > 0 and t["sync_ns"] > 0 and t["fault_ns"] > 0, "statistics time the runtime")
    check(any(reg["d2h_bytes"] >= KERNELS * MIB4 for reg in stats["regions"]), "statistics list the busy region")

    # trace
    trace = json.load(open(trace_path))
    ev = trace["traceEvents"]
    pid = [e["pid"] for e in ev if e["ph"] == "M" and e["args"]["name"].startswith("host")]
    dev = [e["pid"] for e in ev if e["ph"] == "M" and e["args"]["name"].startswith("device")]
    check(len(pid) == 1 and len(dev) == 1, "the trace names a host and a device process")
    x = [e for e in ev if e["ph"] == "X"]
    for e in x:
        check(e["dur"] >= 0 and e["ts"] >= 0, "events have a time and a duration")
    kernels = [e for e in x if e["cat"] == "kernel"]
    check(len(kernels) == KERNELS and all(e["name"] == "add_one" and e["pid"] in dev for e in kernels),
          "one device event per kernel, named")
    calls = [e for e in x if e["cat"] == "call"]
    syncs = [e for e in x if e["cat"] == "sync"]
    check(len(calls) == KERNELS and all("add_one" in e["name"] for e in calls), "one call event per launch")
    check(len(syncs) == KERNELS, "one sync event per sync")
    # Kernels run after their call began and end before their sync returned.
    for c, k, s in zip(sorted(calls, key=lambda e: e["ts"]), sorted(kernels, key=lambda e: e["ts"]),
                       sorted(syncs, key=lambda e: e["ts"])):
        check(c["ts"] <= k["ts"] and k["ts"] + k["dur"] <= s["ts"] + s["dur"] + 0.01, "kernels sit between call and sync")
    h2d = [e for e in x if e["cat"] == "transfer" and e["name"] == "host->device"]
    d2h = [e for e in x if e["cat"] == "transfer" and e["name"] == "device->host"]
    check(sum(e["args"]["bytes"] for e in h2d) == t["h2d_bytes"], "host->device transfers add up to the statistics")
    check(sum(e["args"]["bytes"] for e in d2h) == t["d2h_bytes"], "device->host transfers add up to the statistics")
    # Background copies on the device's copy tracks, the ones a thread waits for on its track.
    copy_tracks = {e["tid"] for e in h2d + d2h if e["pid"] in dev}
    check(copy_tracks <= {1, 2} and copy_tracks, "background transfers are drawn on the device's copy tracks")
    check(all(e["pid"] in dev or e["pid"] in pid for e in h2d + d2h), "every transfer is on a track")
    # Slices on one track nest (a viewer drops the ones that do not).
    by_track = {}
    for e in x:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    misnested = 0
    for events in by_track.values():
        open_ends = []
        for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= e["ts"]:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + 0.002:
                misnested += 1
            open_ends.append(end)
    check(misnested == 0, "slices on each track nest (%d do not)" % misnested)
    faults = [e for e in x if e["cat"] == "fault"]
    check(len(faults) >= t["read_faults"] and all(e["pid"] in pid for e in faults), "faults are drawn on the thread")
    io = [e for e in x if e["cat"] == "io"]
    check(any(e["name"] == "write" and e["args"]["moved"] == MIB4 for e in io) and
          any(e["name"] == "read" and e["args"]["moved"] == MIB4 for e in io), "fread and fwrite are traced")
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check(any(n.startswith("tool_app") for n in names) and "stream 0" in names, "tracks are named")
    check(trace["otherData"]["dropped"] == 0, "no events dropped")

    # profile: the CPU's reads are charged to the line in sum_on_cpu
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tool_app.c")).read().splitlines()
    line = 1 + next(i for i, l in enumerate(src) if "the line the profile must name" in l)
    rows = [l for l in r.stderr.splitlines() if "tool_app.c:" in l]
    check(any("sum_on_cpu" in l and "tool_app.c:%d" % line in l for l in rows), "the profile names the line that faults")
    check(any("tool_app.c:" in l and "main" in l for l in rows), "the profile names the calls in main")

    # ---- %p: a program started by another gets a file of its own
    pattern = os.path.join(tmp, "t-%p.json")
    r = run(["--trace", pattern, "--stats=json:" + os.path.join(tmp, "s-%p.json"), "--", "sh", "-c",
             '"$0" "$1" && "$0" "$1"', APP, scratch])
    check(r.returncode == 0, "two runs under one launcher succeed")
    traces = sorted(f for f in os.listdir(tmp) if f.startswith("t-") and f.endswith(".json"))
    stat_files = sorted(f for f in os.listdir(tmp) if f.startswith("s-") and f.endswith(".json"))
    # The shell may or may not start the runtime (it allocates little); the
    # two programs must have a trace each that holds their kernels.
    with_kernels = [f for f in traces
                    if sum(1 for e in json.load(open(os.path.join(tmp, f)))["traceEvents"] if e.get("cat") == "kernel")
                    == KERNELS]
    check(len(with_kernels) == 2, "each program writes its own trace (%s)" % traces)
    check(len([f for f in stat_files if json.load(open(os.path.join(tmp, f)))["totals"]["kernels"] == KERNELS]) == 2,
          "each program writes its own statistics")

    # ---- a program that never uses shared memory still gets its trace file,
    # and a wrapper that never uses it does not overwrite its child's
    empty = os.path.join(tmp, "unused.json")
    r = run(["--trace", empty, "--", "true"])
    events = json.load(open(empty))["traceEvents"] if os.path.exists(empty) else None
    check(r.returncode == 0 and events is not None and not any(e.get("ph") == "X" for e in events)
          and any("did not start" in str(e.get("args")) for e in events),
          "--trace writes a timeline that says so for a program that never used shared memory")
    wrapped = os.path.join(tmp, "wrapped.json")
    r = run(["--trace", wrapped, "--", "sh", "-c", '"$0" "$1"; true', APP, scratch])
    check(r.returncode == 0 and os.path.exists(wrapped) and
          sum(1 for e in json.load(open(wrapped))["traceEvents"] if e.get("cat") == "kernel") == KERNELS,
          "a wrapper shell leaves its child's timeline in the one trace file")

    # ---- the default table goes to stderr, the program's output stays its own
    r = run(["--stats", "--", APP, scratch])
    check(r.returncode == 0 and "adsm statistics" in r.stderr and "adsm statistics" not in r.stdout,
          "--stats prints the table on stderr")
    check("kernels launched" in r.stderr, "the table names the counters")

    check("statistics: none" not in r.stderr, "a program that used the runtime says nothing of missing statistics")

    # ---- a program that closes its stderr on its way out (coreutils' close_stdout, mawk) before the runtime's
    # exit handlers run: the reports still come, where its stderr went
    for how in ("fclose", "close"):
        r = run(["--stats", "--profile", "--", APP, scratch], env={"TOOL_APP_CLOSE_STDERR": how})
        check(r.returncode == 0 and "kernels launched" in r.stderr and "adsm profile" in r.stderr,
              "the statistics and the profile of a program that closes its stderr at exit (%s)" % how)
    r = run(["--stats", "--", "ls", tmp])
    check(r.returncode == 0 and "the runtime did not start in ls" in r.stderr,
          "a coreutils program, which closes its stderr at exit, still says it did not start the runtime")
    r = run(["--stats", "--", "sh", "-c", '"$0" "$1" 2>/dev/null', APP, scratch],
            env={"TOOL_APP_CLOSE_STDERR": "fclose"})
    check(r.returncode == 0 and "adsm statistics" not in r.stderr,
          "the kept copy is the program's stderr: sent to /dev/null, the table goes there")
    r = run(["--stats=json:" + os.path.join(tmp, "closing.json"), "--", APP, scratch],
            env={"TOOL_APP_CLOSE_STDERR": "fclose"})
    fds = r.returncode == 0 and os.path.exists(os.path.join(tmp, "closing.json"))
    check(fds, "a program that closes its stderr writes JSON statistics as before")

    # ---- a program that never started the runtime says so, rather than nothing where statistics were asked
    # for; only the program adsm-run launched, not every one it starts, and never adsm-run itself
    r = run(["--stats", "--", "true"])
    check(r.returncode == 0 and "adsm statistics: none; the runtime did not start in true" in r.stderr
          and "malloc returns shared memory for 1048576 bytes or more" in r.stderr,
          "--stats says that a program never started the runtime, and what would have started it")
    r = run(["--stats", "--device", "cuda", "--", "true"])
    check("malloc stays the C library's on cuda" in r.stderr and "GPU calls routed: CUDA" in r.stderr,
          "on cuda the line says that malloc is not shared there by default")
    # (bash, not dash, which leaves without running the exit handlers)
    r = run(["--stats", "--", "bash", "-c", '"$0" "$1" && /bin/true && /bin/true; true', APP, scratch])
    check(r.returncode == 0 and r.stderr.count("adsm statistics") == 2 and "kernels launched" in r.stderr
          and "did not start in bash" in r.stderr and "did not start in true" not in r.stderr,
          "of a wrapper's processes, the one adsm-run launched says so, its other children stay silent")
    r = run(["--stats", "--", os.path.join(tmp, "no-such-program")])
    check(r.returncode == 127 and "statistics" not in r.stderr, "adsm-run itself reports no statistics")
    r = run(["--device", "remote", "--remote", "127.0.0.1:1", "--stats", "--", APP, scratch])
    reason = next((l.split("cannot start: ", 1)[1] for l in r.stderr.splitlines() if "cannot start: " in l), None)
    check(r.returncode != 0 and reason is not None and
          any("the runtime could not start in tool_app" in l and l.endswith(": " + reason) for l in r.stderr.splitlines()),
          "a failed start is the statistics' line, with its reason")
    unused = os.path.join(tmp, "unused-stats.json")
    r = run(["--stats=json:" + unused, "--", "true"])
    stats = json.load(open(unused)) if os.path.exists(unused) else {}
    check(r.returncode == 0 and stats.get("runtime") == "not started" and stats.get("device") == "sim"
          and stats.get("totals", {}).get("kernels") == 0 and stats.get("regions") == [],
          "--stats=json writes a file that says so for a program that never started the runtime")
    wrapped = os.path.join(tmp, "wrapped-stats.json")
    r = run(["--stats=json:" + wrapped, "--", "sh", "-c", '"$0" "$1"; true', APP, scratch])
    stats = json.load(open(wrapped)) if os.path.exists(wrapped) else {}
    check(r.returncode == 0 and stats.get("runtime") == "started" and stats["totals"]["kernels"] == KERNELS,
          "a wrapper shell leaves its child's statistics in the one file")

    # ---- how writes are found follows the link: a link that moves a page faster than the kernel
    # tracks a write (a GPU's) gets protection faults, a slow one what the kernel offers
    def tracking(extra):
        path = os.path.join(tmp, "tracking.json")
        r = run(["--protocol", "delta", "--stats=json:" + path, "--", APP, scratch], env=extra)
        check(r.returncode == 0, "the program runs with %s" % extra)
        return json.load(open(path))["dirty_tracking"] if r.returncode == 0 else None

    unmodelled = tracking({})
    check(tracking({"ADSM_SIM_LINK_GBPS": "55"}) == "mprotect", "a 55 GB/s link finds writes by faults")
    check(tracking({"ADSM_SIM_LINK_GBPS": "2"}) == unmodelled, "a 2 GB/s link keeps the kernel's tracking")
    if unmodelled == "uffd":
        check(tracking({"ADSM_SIM_LINK_GBPS": "55", "ADSM_DIRTY_TRACKING": "uffd"}) == "uffd",
              "ADSM_DIRTY_TRACKING=uffd holds on a fast link")

if failures:
    print(len(failures), "check(s) failed")
    sys.exit(1)
print("all tool checks passed")
