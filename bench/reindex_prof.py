"""Run `kgsearch index ARGS` in-process, printing per-step peak RSS (VmHWM reset per step via
/proc/self/clear_refs) and seconds. Usage: python bench/reindex_prof.py CORPUS --db DB (KG_PROF_STEP=graph: cProfile of
that step; KG_TRACE_STEP=text: tracemalloc of what it leaves; KG_PROF_PEAK=1: where the peak was)."""
import os, sys, time, json
def hwm():
    for l in open("/proc/self/status"):
        if l.startswith("VmHWM"): return int(l.split()[1]) / 1024
def rss():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) / 1024
def parts():
    out = {}
    for l in open("/proc/self/status"):
        if l.startswith(("RssAnon", "RssFile", "RssShmem")):
            out[l.split(":")[0][3:].lower()] = round(int(l.split()[1]) / 1024)
    return out
def reset():
    with open("/proc/self/clear_refs", "w") as f: f.write("5")
from kgsearch.indexer import steps
import threading, traceback
PEAK = {"rss": 0, "where": ""}
if os.environ.get("KG_PROF_PEAK"):             # where the largest RSS was seen (10 ms samples)
    main_id = threading.get_ident()
    def sample():
        while True:
            r = rss()
            if r > PEAK["rss"]:
                f = sys._current_frames().get(main_id)
                PEAK.update(rss=round(r), where=" < ".join(f"{fs.name}:{fs.lineno}" for fs in traceback.extract_stack(f)[::-1][:5]))
                del f
            time.sleep(0.01)
    threading.Thread(target=sample, daemon=True).start()
out = {}
def wrap(mod):
    orig = mod.update
    def upd(*a, **k):
        r0 = rss(); pre = hwm(); reset(); t = time.perf_counter(); c = time.process_time()
        prof = None
        if os.environ.get("KG_TRACE_STEP") == mod.NAME:     # what the step leaves allocated
            import tracemalloc
            tracemalloc.start(8)
        if os.environ.get("KG_PROF_STEP") == mod.NAME:      # cProfile of one step, to stderr
            import cProfile
            prof = cProfile.Profile()
            prof.enable()
        try:
            return orig(*a, **k)
        finally:
            if os.environ.get("KG_TRACE_STEP") == mod.NAME:
                import tracemalloc
                snap = tracemalloc.take_snapshot()
                cur, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                print(f"TRACE {mod.NAME}: left {cur / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB", file=sys.stderr)
                for st in snap.statistics("traceback")[:8]:
                    print(f"  {st.size / 2**20:.1f} MiB", " < ".join(f"{fr.filename.split('/')[-1]}:{fr.lineno}" for fr in list(st.traceback)[::-1][:6]), file=sys.stderr)
            if prof is not None:
                import pstats
                prof.disable()
                pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(35)
            out[mod.NAME] = {"rss_before": round(r0), "hwm_before": round(pre), "peak": round(hwm()),
                             "rss_after": round(rss()), "after": parts(), "s": round(time.perf_counter() - t, 2),
                             "cpu": round(time.process_time() - c, 2)}
    mod.update = upd
for m in steps.STEPS: wrap(m)
from kgsearch.cli import main
t = time.perf_counter()
try:
    rc = main(["index"] + sys.argv[1:] + ["--json"]) 
finally:
    out["total"] = {"peak": round(hwm()), "s": round(time.perf_counter() - t, 2)}
    if PEAK["rss"]:
        out["sampled_peak"] = PEAK
    print("PROF", json.dumps(out), file=sys.stderr)
