"""bench/hta_compare.py ASCENT [TRACE...] — the whole device analysis of a Kineto trace, ascent against
Holistic Trace Analysis (HTA), side by side on the same file (docs/device.md; issue: at least 5x).

Two sets of analyses, each the same results on both sides:
- "device": ascent `ascent import TRACE -o x.db`, `ascent report x.db --by device --format json` and
  `ascent advise x.db`, three processes, their summed wall time (process start-up included); HTA
  TraceAnalysis(trace_dir) (the load), then get_temporal_breakdown, get_idle_time_breakdown,
  get_gpu_kernel_breakdown, get_comm_comp_overlap (report's comm_overlap_pct), get_queue_length_summary,
  get_cuda_kernel_launch_stats and get_memory_bw_summary (visualize off).
- "device+opkernels": the same, and each CPU operator's kernels and launch delay: ascent
  `ascent report x.db --by opkernels` (a fourth process), HTA get_aten_op_kernels_and_delay.
HTA is timed inside a child Python process from before the load to after each set's last analysis:
Python's start-up and HTA's own imports (about 0.5 s here) are not counted, which favours HTA. The
two alternate, REPS times per trace (ASCENT_BENCH_HTA_REPS, default 3), so both see the same host
load.

HTA is found on PYTHONPATH, or in the folder ASCENT_BENCH_HTA names (the folder holding the `hta`
package, e.g. an extracted checkout); without it one JSON line says the comparison was skipped and
how to enable it. Traces: the arguments, else ASCENT_BENCH_HTA_TRACES (space-separated), else the
two largest Kineto fixtures with device work (tests/fixtures/kineto: the NCCL DDP rank and the
ResNet-50 trace).

JSON lines: {"bench":"hta_compare","trace":...,"set":...,"rep":N,"ascent_s":...,"hta_s":...,"ratio":...,
"ascent_cpu_s":...,"hta_cpu_s":...,"ratio_cpu":...} per run and set, then {"bench":"hta_compare",
"trace":...,"set":...,"summary":true,"ascent_s_median":...,"hta_s_median":...,"ratio_median":...,
"ratio_min":...,"ratio_cpu_median":...} per trace and set (ratio = HTA time / ascent time). CPU time
(user + system: for ascent its processes whole, for HTA the child and its parsing workers from the
load on) is what a shared host disturbs least: on a loaded machine the wall times wait for a core,
and ascent's import also waits for its fsync; both are printed.
"""
import json, os, resource, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
HTA_CHILD = r"""
import os, resource, sys, time, warnings, logging
warnings.filterwarnings("ignore")

def cpu():   # this process and its reaped children (HTA parses in a pool of worker processes)
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

from hta.trace_analysis import TraceAnalysis
logging.disable(logging.CRITICAL)
t0, c0 = time.perf_counter(), cpu()
a = TraceAnalysis(trace_dir=sys.argv[1])
a.get_temporal_breakdown(visualize=False)
a.get_idle_time_breakdown(visualize=False)
a.get_gpu_kernel_breakdown(visualize=False)
a.get_comm_comp_overlap(visualize=False)
a.get_queue_length_summary()
a.get_cuda_kernel_launch_stats(visualize=False)
a.get_memory_bw_summary()
print("HTA_SECONDS device %.6f %.6f" % (time.perf_counter() - t0, cpu() - c0))
a.get_aten_op_kernels_and_delay()
print("HTA_SECONDS device+opkernels %.6f %.6f" % (time.perf_counter() - t0, cpu() - c0))
"""


def hta_env():
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1")
    if os.environ.get("ASCENT_BENCH_HTA"):
        env["PYTHONPATH"] = os.environ["ASCENT_BENCH_HTA"] + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def hta_present(env):
    p = subprocess.run([PY, "-c", "import hta.trace_analysis"], env=env, capture_output=True)
    return p.returncode == 0, p.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]


SETS = ("device", "device+opkernels")


def run_ascent(ascent, trace, work):
    """{set: (wall s, cpu s)}: each set's processes in turn, the second set going on from the first."""
    db = os.path.join(work, "x.db")
    if os.path.exists(db):
        os.remove(db)
    steps = {"device": (["import", trace, "-o", db, "-q"], ["report", db, "--by", "device", "--format", "json"],
                        ["advise", db]),
             "device+opkernels": (["report", db, "--by", "opkernels"],)}
    out, wall, cpu = {}, 0.0, 0.0
    for name in SETS:
        t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        for args in steps[name]:
            p = subprocess.run([ascent] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if p.returncode != 0:
                raise RuntimeError("ascent %s: exit %d: %s" % (args[0], p.returncode, p.stderr.decode(errors="replace")[-300:]))
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall += time.perf_counter() - t0
        cpu += (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        out[name] = (wall, cpu)
    return out


def run_hta(trace, work, env):
    d = os.path.join(work, "hta")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
    p = subprocess.run([PY, "-c", HTA_CHILD, d], env=env, capture_output=True)
    out = {}
    for line in p.stdout.decode(errors="replace").splitlines():
        if line.startswith("HTA_SECONDS "):
            f = line.split()
            out[f[1]] = (float(f[2]), float(f[3]))
    if all(k in out for k in SETS):
        return out
    raise RuntimeError("HTA: exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-300:]))


def main():
    ascent = sys.argv[1]
    traces = sys.argv[2:] or os.environ.get("ASCENT_BENCH_HTA_TRACES", "").split()
    if not traces:
        k = os.path.join(ROOT, "tests", "fixtures", "kineto")
        traces = [os.path.join(k, "nccl_parser_config__nccl_data.json.gz"),
                  os.path.join(k, "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz")]
    env = hta_env()
    ok, why = hta_present(env)
    if not ok:
        print(json.dumps({"bench": "hta_compare", "skipped": "HTA not importable (%s); put the folder holding HTA's "
                          "`hta` package on PYTHONPATH or in ASCENT_BENCH_HTA (it needs python3-pandas, "
                          "python3-plotly, python3-networkx, python3-pydot, python3-psutil)" % why[0]}), flush=True)
        return 0
    reps = int(os.environ.get("ASCENT_BENCH_HTA_REPS", "3"))
    rc = 0
    with tempfile.TemporaryDirectory(prefix="ascent-bench-hta-") as work:
        for trace in traces:
            name = os.path.basename(trace)
            runs = {k: [] for k in SETS}   # per set: (ascent s, hta s, ascent cpu s, hta cpu s)
            try:
                for rep in range(1, reps + 1):
                    a = run_ascent(ascent, trace, work)
                    h = run_hta(trace, work, env)
                    for k in SETS:
                        runs[k].append((a[k][0], h[k][0], a[k][1], h[k][1]))
                        print(json.dumps({"bench": "hta_compare", "trace": name, "set": k, "rep": rep,
                                          "ascent_s": round(a[k][0], 4), "hta_s": round(h[k][0], 4),
                                          "ratio": round(h[k][0] / a[k][0], 2), "ascent_cpu_s": round(a[k][1], 4),
                                          "hta_cpu_s": round(h[k][1], 4), "ratio_cpu": round(h[k][1] / a[k][1], 2)}),
                              flush=True)
            except RuntimeError as e:
                print(json.dumps({"bench": "hta_compare", "trace": name, "error": str(e)}), flush=True)
                rc = 1
                continue
            for k in SETS:
                a_s, h_s, ac_s, hc_s = zip(*runs[k])
                ratios = [h / a for a, h in zip(a_s, h_s)]
                ratios_cpu = [h / a for a, h in zip(ac_s, hc_s)]
                print(json.dumps({"bench": "hta_compare", "trace": name, "set": k, "summary": True, "reps": reps,
                                  "bytes": os.path.getsize(trace), "ascent_s_median": round(statistics.median(a_s), 4),
                                  "hta_s_median": round(statistics.median(h_s), 4),
                                  "ratio_median": round(statistics.median(ratios), 2), "ratio_min": round(min(ratios), 2),
                                  "ascent_cpu_s_median": round(statistics.median(ac_s), 4),
                                  "hta_cpu_s_median": round(statistics.median(hc_s), 4),
                                  "ratio_cpu_median": round(statistics.median(ratios_cpu), 2), "goal_ratio": 5}),
                      flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
