"""Throughput harness for gs-cgen's reader.

launch mode: `-- tp2 T N`: T threads call f(a, b) N times each flat out;
  checks delivered (lines printed) + lost (final report) == T*N exactly.
pid mode: tp2 runs flat out (started apart, pinned to CPU 1); gs-cgen -p
  traces it for --duration 3; reports delivered events per wall second
  (from the 'tracing' line to exit) and per CPU second of the tracer (its
  own rusage: the target is not its child here).
Script: trace f { print "{} {}", a, b; }

Usage (root): gcc -g -O2 -pthread -o /tmp/tp/tp2 scripts/throughput/flat_out.c
  python3 scripts/throughput/harness.py REPO launch|pid THREADS RUNS file|null [plain|json] [ringbuf|perf]
f() starts with a nop, so the uprobe sits on an instruction the kernel
emulates (cheap hits: the producer outruns the reader)."""
import os, re, subprocess, sys, time, statistics, threading
REPO, mode, threads, runs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
style = sys.argv[6] if len(sys.argv) > 6 else "plain"
emap = sys.argv[7] if len(sys.argv) > 7 else "ringbuf"
BIN = os.environ.get("TP_BIN", "/tmp/tp/tp2")
CALLS = 1_000_000
SCRIPT = 'trace f { print "{} {}", a, b; }'
rates, cpu_rates, steadies = [], [], []
for r in range(runs):
    dest = "/tmp/tp/out.txt" if out == "file" else "/dev/null"
    target = None
    cmd = [f"{REPO}/.venv/bin/python", f"{REPO}/cli.py", "trace", "-s", SCRIPT, "--output", style,
           "--event-map", emap]
    if mode == "launch":
        cmd += ["--", BIN, str(threads), str(CALLS)]
        env = dict(os.environ, TP_CPU="1")
    else:
        target = subprocess.Popen(["taskset", "-c", "1", BIN, str(threads), str(10**12)],
                                  stderr=subprocess.DEVNULL)
        cmd += ["-p", str(target.pid), "--duration", "3"]
        env = dict(os.environ)
    with open(dest, "w") as fh:
        tr = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.PIPE, text=True, env=env)
        start = None; err = []
        for line in tr.stderr:
            err.append(line)
            if start is None and "tracing " in line:
                start = time.monotonic()
                fields = open(f"/proc/{tr.pid}/stat").read().rsplit(")", 1)[1].split()
                cpu_at_start = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
                samples = []
                def sample():
                    for delay in (0.5, 2.0):
                        time.sleep(delay)
                        samples.append((time.monotonic(), os.path.getsize(dest) if out == "file" else 0))
                sampler = threading.Thread(target=sample); sampler.start()
        _, status, usage = os.wait4(tr.pid, 0)
        end = time.monotonic()
        tr.returncode = os.waitstatus_to_exitcode(status)
    if target:
        target.kill(); target.wait()
    errtext = "".join(err)
    if start is None or tr.returncode:
        print(errtext); sys.exit(1)
    m = re.findall(r"lost (\d+) events in total", errtext)
    lost = int(m[0]) if m else 0
    sampler.join()
    delivered = sum(1 for _ in open(dest)) if out == "file" else None
    steady = None
    if out == "file" and delivered:
        bytes_per_line = os.path.getsize(dest) / delivered
        (t0, b0), (t1, b1) = samples
        steady = (b1 - b0) / bytes_per_line / (t1 - t0)
        steadies.append(steady)
    note = ""
    if mode == "launch":
        produced = threads * CALLS
        if delivered is None:
            delivered, note = produced - lost, "unchecked"
        else:
            note = "EXACT" if delivered + lost == produced else f"MISMATCH by {produced - delivered - lost}"
    wall = end - start
    cpu = usage.ru_utime + usage.ru_stime - cpu_at_start
    rates.append(delivered / wall)
    if mode == "pid":
        cpu_rates.append(delivered / cpu)
        note = f"tracer cpu while tracing {cpu:.2f}s ({delivered / cpu:.3g} events per CPU-s)"
    steady_text = f" steady-state {steady:.3g}/s" if steady else ""
    print(f"run {r}: delivered={delivered} lost={lost} {note} wall={wall:.2f}s rate={delivered / wall:.3g}/s{steady_text}", flush=True)
print(f"MEDIAN {statistics.median(rates):.3g} events/s over {runs} runs ({mode}, {style}, {out}, {emap}, {threads} threads)"
      + (f"; per tracer CPU-second {statistics.median(cpu_rates):.3g}" if cpu_rates else "")
      + (f"; steady-state {statistics.median(steadies):.3g}/s" if steadies else ""))
