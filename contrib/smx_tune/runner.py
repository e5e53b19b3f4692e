# SPDX-License-Identifier: BSD-3-Clause
"""Running the project's benchmark (tests/bench/smx_bench) on a bound pair of CPUs.

Every MPI job of smx-tune goes through here: the mpirun line that binds rank 0 and rank 1
to a chosen pair of CPUs, the probes that prove the binding and btl/smx's class, the probe
of each single-copy mechanism, and one measuring run whose CSV rows arrive one size at a
time (for the progress line).
"""
import csv
import os
import re
import signal
import subprocess
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
PROBE_ARGS = ["--sizes", "64K", "--samples", "1", "--target-mb", "1"]
# The benchmark prints btl/smx's policy, as each rank built it (an MPI_T control variable).
POLICY_ARGS = ["--print-cvar", "btl_smx_policy"]


def _rank_policies(out):
    """(rank, peer, {key: value}) of the benchmark's '# cvar RANK btl_smx_policy key=value
    ...' lines of a two-rank job (btl_smx_policy through MPI_T: pieces_in_flight=
    chunk_cycle= skew...= <class>.eager_limit=<bytes|auto> <class>.single_copy_min=
    <bytes|never|auto> peer<r>=<class> peer<r>.smsc=<0|1> peer<r>.ways=4k:e,8k:s,...)."""
    for m in re.finditer(r"^# cvar ([01]) btl_smx_policy (.*)$", out, re.M):
        words = dict(w.split("=", 1) for w in m.group(2).split() if "=" in w)
        yield m.group(1), "1" if m.group(1) == "0" else "0", words


def pair_policy(out):
    """What btl/smx was told for the peer of each rank of a two-rank job, from its policy:
    a list of (class, single-copy threshold), the threshold a number of bytes (as a
    string), "never", or "auto" (measured), and "never" where the peer has no single-copy
    endpoint. Empty if btl/smx was not used (no policy)."""
    got = []
    for _, peer, words in _rank_policies(out):
        cls = words.get("peer" + peer)
        if cls is None:
            continue
        threshold = words.get(cls + ".single_copy_min", "never")
        if words.get("peer%s.smsc" % peer) != "1":
            threshold = "never"
        got.append((cls, threshold))
    return got


def pair_ways(out):
    """The way of each size range of the peer's messages to each rank, as its policy
    said when the benchmark read it: a list of {range: way} ('4k': 'e', ..., '8m': 'd';
    e eagerly, s single copy, d double copy), one per rank whose policy names its peer's
    ways. (',late' dropped: a late receiver's word, btl_smx_skew.c.)"""
    got = []
    for _, peer, words in _rank_policies(out):
        text = words.get("peer%s.ways" % peer)
        if text is None:
            continue
        got.append(dict(w.split(":", 1) for w in text.split(",") if ":" in w))
    return got


class RunError(Exception):
    """An MPI job failed or did not do what it was asked; the message says which."""


def default_bench():
    build = os.environ.get("SMX_BUILD", os.path.join(TOP, "build"))
    return os.path.join(build, "tests", "bench", "smx_bench")


def ensure_bench(path):
    """Build smx_bench with this Open MPI's mpicc when it is missing or older than its
    sources (the same command tests/bench/run-bench uses)."""
    src_dir = os.path.join(TOP, "tests", "bench")
    srcs = [os.path.join(src_dir, f) for f in ("smx_bench.c", "bench_util.c", "bench_util.h")]
    if os.path.exists(path) and all(os.path.getmtime(path) >= os.path.getmtime(s)
                                    for s in srcs if os.path.exists(s)):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cmd = [os.environ.get("MPICC", "mpicc"), "-O2", "-Wall", "-Wextra", "-o", path,
           srcs[0], srcs[1]]
    if subprocess.call(cmd) != 0:
        raise RunError("building the benchmark failed: " + " ".join(cmd))


def parse_bench_csv(lines):
    """smx_bench's CSV rows (its '#' comment lines skipped) as dicts with numbers."""
    rows = []
    for rec in csv.DictReader(l for l in lines if l.strip() and not l.startswith("#")):
        rows.append({"bytes": int(rec["bytes"]), "iters": int(rec["iters"]),
                     "usec": float(rec["usec"]), "mbps": float(rec["mbps"])})
    return rows


def cpu_list(text):
    """'0-2,5' -> {0, 1, 2, 5}"""
    cpus = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


class Launcher:
    """mpirun with two ranks bound to a pair of CPUs."""

    def __init__(self, mpirun="mpirun", bench=None):
        self.mpirun = mpirun
        self.bench = bench or default_bench()

    def base(self, pair, same_core=False):
        a, b = pair
        cmd = [self.mpirun, "-np", "2"]
        if same_core:  # two hardware threads of one core: bind each to its own thread
            cmd += ["--map-by", "pe-list=%d,%d:ordered:hwtcpus" % (a, b),
                    "--bind-to", "hwthread"]
        else:
            cmd += ["--map-by", "pe-list=%d,%d:ordered" % (a, b), "--bind-to", "core"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        return cmd

    def _run(self, cmd, timeout):
        """(exit status, stdout and stderr together) of a probe job. Past `timeout` seconds
        the job is stopped politely (stop(): mpirun must get the chance to end its ranks)
        and RunError raised. The output goes to a file, so a full pipe cannot hold up a job
        that is being stopped."""
        with tempfile.TemporaryFile(mode="w+", errors="replace") as out:
            try:
                proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
            except FileNotFoundError:
                raise RunError("%s not found: source contrib/env.sh first" % cmd[0])
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop(proc)
                raise RunError("no answer within %d s (stopped): %s" % (timeout, " ".join(cmd)))
            except BaseException:
                stop(proc)
                raise
            out.seek(0)
            return proc.returncode, out.read()

    def check_binding(self, pair, same_core=False, timeout=60):
        """Raise RunError unless rank 0 runs on pair[0] and rank 1 on pair[1] only."""
        probe = ('echo "smx-tune-binding $OMPI_COMM_WORLD_RANK '
                 '$(grep Cpus_allowed_list /proc/self/status | cut -f2)"')
        rc, out = self._run(self.base(pair, same_core) + ["sh", "-c", probe], timeout)
        got = dict(m.groups() for m in
                   re.finditer(r"^smx-tune-binding (\d) (\S+)$", out, re.M))
        want = {"0": pair[0], "1": pair[1]}
        ok = rc == 0 and len(got) == 2
        if ok:
            for rank, cpu in want.items():
                allowed = cpu_list(got[rank])
                other = want["1" if rank == "0" else "0"]
                ok = ok and cpu in allowed and other not in allowed
        if not ok:
            raise RunError("binding two ranks to CPUs %d and %d is impossible here:\n  %s\n%s"
                           % (pair[0], pair[1], " ".join(self.base(pair, same_core)),
                              _tail(out)))

    def smx_classes(self, pair, same_core=False, extra=(), timeout=60):
        """btl/smx's class for the pair (from its policy, read through MPI_T) and the job's
        output."""
        cmd = self.base(pair, same_core) + ["--mca", "btl", "smx,self"] + list(extra)
        rc, out = self._run(cmd + [self.bench] + PROBE_ARGS + POLICY_ARGS, timeout)
        if rc != 0:
            raise RunError("a two-rank btl/smx job failed (exit %d): %s\n%s"
                           % (rc, " ".join(cmd), _tail(out)))
        return set(cls for cls, _ in pair_policy(out)), out

    def probe_mechanism(self, name, pair, same_core=False, timeout=60):
        """None when Open MPI selects smsc/<name> and btl/smx gets single copy from it;
        else the reason it cannot be used."""
        try:
            _, out = self.smx_classes(pair, same_core, ["--mca", "smsc", name, "--mca",
                                                        "smsc_base_verbose", "10"], timeout)
        except RunError as e:
            return "a job asking for it failed: %s" % str(e).splitlines()[0]
        if "selected shared-memory single-copy component: %s" % name in out and \
                "without single copy" not in out:
            return None
        m = re.search(r"smsc:%s: not available: (.*)" % re.escape(name), out)
        return m.group(1).strip() if m else "Open MPI could not select smsc/%s" % name

    def measure(self, cmd_args, bench_args, timeout, on_row=None):
        """One measuring job: mpirun arguments (after the binding) and benchmark arguments.
        Returns (rows, stderr text and the benchmark's comment lines). on_row(row) is called as each size finishes."""
        cmd = cmd_args + [self.bench] + bench_args
        with tempfile.TemporaryFile(mode="w+") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                    errors="replace")
            expired = threading.Event()
            watchdog = threading.Timer(timeout, lambda: (expired.set(), stop(proc)))
            watchdog.start()
            lines = []
            try:
                for line in proc.stdout:
                    lines.append(line)
                    if on_row and line[:1].isalpha() and not line.startswith("mode,"):
                        on_row(parse_bench_csv(["mode,bytes,iters,usec,mbps", line])[0])
                proc.wait()
            except BaseException:
                stop(proc)
                raise
            finally:
                watchdog.cancel()
            err.seek(0)
            err_text = err.read()
        if expired.is_set():
            raise RunError("benchmark stopped after %d s: %s" % (timeout, " ".join(cmd)))
        if proc.returncode != 0:
            raise RunError("benchmark failed (exit %d): %s\n%s"
                           % (proc.returncode, " ".join(cmd), _tail("".join(lines) + err_text)))
        # the benchmark's comment lines (its MPI_T report) go with the job's messages
        return parse_bench_csv(lines), err_text + "".join(l for l in lines if l.startswith("#"))


def stop(proc):
    """End a job this tool started (its mpirun, by pid), politely first."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGINT, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            proc.send_signal(sig)
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def _tail(text, n=15):
    lines = [l for l in text.splitlines() if l.strip()]
    return "\n".join("    " + l for l in lines[-n:])
