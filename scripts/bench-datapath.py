#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The emulator's data path beside libfabric's own tcp and shm providers.

    scripts/bench-datapath.py [BUILD_DIR]        default: build

Prints a Markdown section on stdout (for BENCHMARKS.md; `make bench` runs it
through scripts/bench-datapath.sh). Every figure is libfabric's fi_pingpong
(libfabric-bin), the client's result row, as the median of BENCH_COUNT runs
(default 5) with the lowest and highest beside it. The runs of every row are
interleaved (round 1 of each row, then round 2 ...), so that rows of one run
see the same load: on a shared machine it is their ratios that hold, not
their absolute figures.

  efa   `-p efa` inside `efap2p sim` (p5.48xlarge): one host (server and
        client under one `efap2p sim`, FI_EFA_ENABLE_SHM_TRANSFER=0 so that
        the bytes cross the emulated device instead of libfabric's shm) or
        two hosts (two `efap2p sim --fabric DIR`)
        The "device RDMA" rows set FI_EFA_USE_DEVICE_RDMA=1 (libfabric 1.17
        does not use the device's RDMA read unless told to; deployments on
        p4d and p5 set it): a 1 MiB message is then one RDMA read.
  tcp   `-p tcp` on the loopback
  shm   `-p shm`

The "payload not copied" rows run build/bench-floor/libefasim.so, a build in
which a send pulled across processes copies only its first buffer (where
libfabric puts its packet header), not its payload: the data path's cost
without the emulator's copy of the bytes, the floor any copy could reach.

With EFASIM_BASELINE_LIBRARY set to another build of libefasim.so, its rows
("before") are measured in the same rounds (EFASIM_LIBRARY for `efap2p sim`).

With BENCH_DEBIAN13 naming scripts/debian13.sh (scripts/bench-datapath.sh
sets it when it may run it: as root), the "Debian 13" rows run the same
build inside make test-debian13's Debian 13 root (libfabric 2.1), in the
same rounds as this host's rows: its efa rows name the efa fabric (`-f
efa`: efa-direct, which fi_pingpong takes by default there, carries no
message over 8800 bytes), on which libfabric 2.x reads with the device's
RDMA by default; its tcp and shm rows are that libfabric's. Each row's
ratios are to tcp and shm of its own stack.
"""

import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ctests", "emulator"))
from ports import free_port, listening  # noqa: E402

TIMEOUT = 600
D13 = "Debian 13: "  # the label of the rows run inside the Debian 13 root


def result_row(out):
    """bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec -> (MB/s, usec, seconds)."""
    row = None
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and f[0][0].isdigit():
            row = f
    if not row:
        return None
    return float(row[5]), float(row[6]), float(row[4].rstrip("s"))


class Bench:
    def __init__(self, build):
        self.efap2p = os.path.join(build, "efap2p")
        self.count = int(os.environ.get("BENCH_COUNT", "5"))
        self.baseline = os.environ.get("EFASIM_BASELINE_LIBRARY", "")
        self.build = build
        self.debian13 = os.environ.get("BENCH_DEBIAN13", "")

    def in_debian13(self, prov, args, port, hosts, rdma):
        """One row's run inside the Debian 13 root: the server in the
        background, then the client, whose output is what comes back."""
        efap2p = shlex.quote(os.path.abspath(self.efap2p))
        server = " ".join(map(shlex.quote, args + ["-B", str(port)]))
        client = " ".join(map(shlex.quote, args + ["-P", str(port), "127.0.0.1"]))
        wait = (f"while ! grep -qi ':{port:04X} 00000000:0000 0A' /proc/net/tcp /proc/net/tcp6 "
                f"2>/dev/null; do sleep 0.05; done")
        env = "export FI_EFA_USE_DEVICE_RDMA=1; " if rdma else ""
        if prov == "efa" and hosts == "two":
            script = (f"{env}d=$(mktemp -d); {efap2p} sim --fabric \"$d\" -- {server} >/dev/null 2>&1 & "
                      f"{wait}; {efap2p} sim --fabric \"$d\" -- {client}; wait")
        elif prov == "efa":
            inner = f"{server} >/dev/null 2>&1 & {wait}; {client}; wait"
            script = f"{env}export FI_EFA_ENABLE_SHM_TRANSFER=0; {efap2p} sim -- sh -c {shlex.quote(inner)}"
        else:
            script = f"{server} >/dev/null 2>&1 & {wait}; {client}; wait"
        return [self.debian13, self.build, "run", script]

    def pingpong(self, prov, ep, size, iters, hosts="one", lib=None, rdma=False, debian13=False,
                 fabric=None):
        port = free_port()
        args = ["fi_pingpong", "-p", prov, "-e", ep, "-S", str(size), "-I", str(iters)]
        if fabric:
            args += ["-f", fabric]
        env = dict(os.environ)
        env.pop("EFASIM_TRACE", None)
        fab = None
        if lib:
            env["EFASIM_LIBRARY"] = lib
        env.pop("FI_EFA_USE_DEVICE_RDMA", None)
        if rdma:
            env["FI_EFA_USE_DEVICE_RDMA"] = "1"
        if debian13:
            server_cmd, client_cmd = None, self.in_debian13(prov, args, port, hosts, rdma)
        elif prov != "efa":
            server_cmd, client_cmd = args + ["-B", str(port)], args + ["-P", str(port), "127.0.0.1"]
        elif hosts == "one":
            env["FI_EFA_ENABLE_SHM_TRANSFER"] = "0"
            script = (f"{' '.join(args)} -B {port} >/dev/null 2>&1 & "
                      f"while ! grep -qi ':{port:04X} 00000000:0000 0A' /proc/net/tcp /proc/net/tcp6 "
                      f"2>/dev/null; do sleep 0.05; done; {' '.join(args)} -P {port} 127.0.0.1; wait")
            server_cmd, client_cmd = None, [self.efap2p, "sim", "--", "sh", "-c", script]
        else:
            fab = tempfile.mkdtemp(prefix="efap2p-bench-fabric-")
            server_cmd = [self.efap2p, "sim", "--fabric", fab, "--"] + args + ["-B", str(port)]
            client_cmd = [self.efap2p, "sim", "--fabric", fab, "--"] + args + ["-P", str(port), "127.0.0.1"]
        server = None
        try:
            if server_cmd:
                server = subprocess.Popen(server_cmd, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
                end = time.monotonic() + 60
                while not listening(port) and time.monotonic() < end and server.poll() is None:
                    time.sleep(0.02)
            out = subprocess.run(client_cmd, env=env, capture_output=True, text=True,
                                 timeout=TIMEOUT).stdout
            return result_row(out)
        except subprocess.TimeoutExpired:
            return None
        finally:
            if server:
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
            if fab:
                shutil.rmtree(fab, ignore_errors=True)

    def run(self, rows):
        """rows: [(label, kwargs)] -> {label: [results]}, interleaved rounds."""
        got = {label: [] for label, _ in rows}
        for _ in range(self.count):
            for label, kw in rows:
                r = self.pingpong(**kw)
                if r:
                    got[label].append(r)
        return got


def med(vals):
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "failed" if v is None else format(v, spec)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    b = Bench(build)
    lib = os.path.join(build, "libefasim.so")
    before = [("efa, before", b.baseline)] if b.baseline else []
    floor_lib = os.path.abspath(os.path.join(build, "bench-floor", "libefasim.so"))
    floor = [("efa, one host, payload not copied", floor_lib)] if os.path.exists(floor_lib) else []

    mib = [("efa, one host", dict(prov="efa", ep="rdm", size=1 << 20, iters=50)),
           ("efa, two hosts", dict(prov="efa", ep="rdm", size=1 << 20, iters=50, hosts="two")),
           ("efa, one host, device RDMA", dict(prov="efa", ep="rdm", size=1 << 20, iters=50, rdma=True)),
           ("tcp", dict(prov="tcp", ep="rdm", size=1 << 20, iters=50)),
           ("shm", dict(prov="shm", ep="rdm", size=1 << 20, iters=50))]
    mib += [(l, dict(prov="efa", ep="rdm", size=1 << 20, iters=50, lib=p)) for l, p in before + floor]
    gib = [("efa, one host", dict(prov="efa", ep="rdm", size=1 << 20, iters=512)),
           ("efa, one host, device RDMA", dict(prov="efa", ep="rdm", size=1 << 20, iters=512, rdma=True)),
           ("tcp", dict(prov="tcp", ep="rdm", size=1 << 20, iters=512)),
           ("shm", dict(prov="shm", ep="rdm", size=1 << 20, iters=512))]
    gib += [(l, dict(prov="efa", ep="rdm", size=1 << 20, iters=512, lib=p)) for l, p in before + floor]
    small = [("efa rdm (SRD), one host", dict(prov="efa", ep="rdm", size=64, iters=2000)),
             ("efa rdm (SRD), two hosts", dict(prov="efa", ep="rdm", size=64, iters=2000, hosts="two")),
             ("efa dgram (UD), one host", dict(prov="efa", ep="dgram", size=64, iters=2000)),
             ("tcp rdm", dict(prov="tcp", ep="rdm", size=64, iters=2000)),
             ("shm rdm", dict(prov="shm", ep="rdm", size=64, iters=2000))]
    small += [(l + " (rdm, one host)", dict(prov="efa", ep="rdm", size=64, iters=2000, lib=p))
              for l, p in before]
    if b.debian13:
        d13 = dict(debian13=True)
        efa13 = dict(d13, fabric="efa")
        mib += [(D13 + "efa, one host", dict(prov="efa", ep="rdm", size=1 << 20, iters=50, **efa13)),
                (D13 + "efa, two hosts", dict(prov="efa", ep="rdm", size=1 << 20, iters=50, hosts="two",
                                              **efa13)),
                (D13 + "tcp", dict(prov="tcp", ep="rdm", size=1 << 20, iters=50, **d13)),
                (D13 + "shm", dict(prov="shm", ep="rdm", size=1 << 20, iters=50, **d13))]
        gib += [(D13 + "efa, one host", dict(prov="efa", ep="rdm", size=1 << 20, iters=512, **efa13)),
                (D13 + "tcp", dict(prov="tcp", ep="rdm", size=1 << 20, iters=512, **d13)),
                (D13 + "shm", dict(prov="shm", ep="rdm", size=1 << 20, iters=512, **d13))]
        small += [(D13 + "efa rdm (SRD), one host", dict(prov="efa", ep="rdm", size=64, iters=2000, **efa13)),
                  (D13 + "efa-direct rdm (SRD), one host",
                   dict(prov="efa", ep="rdm", size=64, iters=2000, debian13=True, fabric="efa-direct")),
                  (D13 + "efa dgram (UD), one host", dict(prov="efa", ep="dgram", size=64, iters=2000, **d13)),
                  (D13 + "tcp rdm", dict(prov="tcp", ep="rdm", size=64, iters=2000, **d13)),
                  (D13 + "shm rdm", dict(prov="shm", ep="rdm", size=64, iters=2000, **d13))]
    t0 = time.monotonic()
    r_mib, r_gib, r_small = b.run(mib), b.run(gib), b.run(small)
    took = time.monotonic() - t0
    libfabric = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libfabric1"],
                               capture_output=True, text=True).stdout or "?"
    if b.debian13:
        v = subprocess.run([b.debian13, build, "run", "dpkg-query -W -f '${Version}' libfabric1"],
                           capture_output=True, text=True).stdout or "?"
        libfabric += f" (the Debian 13 rows: libfabric {v})"
    print("## EFA emulator data path (fi_pingpong beside tcp and shm)\n")
    print(f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {os.cpu_count()} CPUs "
          f"(load average {os.getloadavg()[0]:.1f} at the end), {os.uname().sysname} "
          f"{os.uname().release}, machine model `p5.48xlarge`, libfabric {libfabric}. Medians of "
          f"{b.count} runs (lowest and highest in brackets), every row's runs interleaved with the "
          f"others' so that they see the same load; {took:.0f} s in all. On a shared machine the "
          f"ratios of one run hold, not the absolute figures. Method: scripts/bench-datapath.py.\n")

    if b.baseline:
        print("The rows \"efa, before\" are the build of libefasim.so named by EFASIM_BASELINE_LIBRARY, "
              "measured in the same rounds as the others.\n")

    def stack_of(label):
        return D13 if label.startswith(D13) else ""

    def ratio(res, key, stack=""):
        """The one-host efa row against tcp (above 1: better than tcp), or None."""
        e = med([x[key] for x in res.get(stack + "efa, one host", [])])
        t = med([x[key] for x in res.get(stack + "tcp", [])])
        if not e or not t:
            return None
        return e / t if key == 0 else t / e

    def bw_table(res, title, key):
        print(f"| {title} | median | range | x tcp | x shm |")
        print("|---|---|---|---|---|")
        for label, vals in res.items():
            # the ratios are to the tcp and shm of the row's own stack
            tcp = med([x[key] for x in res.get(stack_of(label) + "tcp", [])])
            shm = med([x[key] for x in res.get(stack_of(label) + "shm", [])])
            v = [x[key] for x in vals]
            m = med(v)
            rng = f"{min(v):.4g}-{max(v):.4g}" if v else ""
            rt = f"{m / tcp:.2f}" if m and tcp else ""
            rs = f"{m / shm:.2f}" if m and shm else ""
            if key == 2:  # seconds: smaller is better, ratio is tcp's time / ours
                rt = f"{tcp / m:.2f}" if m and tcp else ""
                rs = f"{shm / m:.2f}" if m and shm else ""
            print(f"| {label} | **{fmt(m, '.4g')}** | {rng} | {rt} | {rs} |")
        print()

    print("### Bandwidth, 1 MiB messages (fi_pingpong -S 1m -I 50), MB/s\n")
    bw_table(r_mib, "provider", 0)
    print("### Time for 1 GiB (fi_pingpong -S 1m -I 512: 512 round trips of 1 MiB each way), s\n")
    print("The ratios are tcp's (shm's) time over the row's: above 1 is faster.\n")
    bw_table(r_gib, "provider", 2)
    r1, r2 = ratio(r_mib, 0), ratio(r_gib, 2)
    met = r1 is not None and r2 is not None and r1 >= 1.0 and r2 >= 1.0
    print(f"Target: the emulator (one host) at >= 1.0x tcp at 1 MiB and for 1 GiB: "
          f"{'met' if met else 'not met'} in this run ({fmt(r1, '.2f')}x, {fmt(r2, '.2f')}x).\n")
    if b.debian13:
        r1, r2 = ratio(r_mib, 0, D13), ratio(r_gib, 2, D13)
        met = r1 is not None and r2 is not None and r1 >= 1.0 and r2 >= 1.0
        print(f"On Debian 13 (libfabric 2.1's default path for these sizes: the efa fabric, reading "
              f"with the device's RDMA): {'met' if met else 'not met'} in this run "
              f"({fmt(r1, '.2f')}x, {fmt(r2, '.2f')}x).\n")
    else:
        print("The Debian 13 rows were not measured: they need root (scripts/debian13.sh, as "
              "`make test-debian13` runs it).\n")
    if floor:
        label = floor[0][0]
        f1 = med([x[0] for x in r_mib.get(label, [])])
        f2 = med([x[2] for x in r_gib.get(label, [])])
        t1 = med([x[0] for x in r_mib.get("tcp", [])])
        t2 = med([x[2] for x in r_gib.get("tcp", [])])
        if f1 and f2 and t1 and t2:
            print(f"Without the copy of the payload (the floor rows) the default path reaches "
                  f"{f1 / t1:.2f}x tcp at 1 MiB and {t2 / f2:.2f}x for 1 GiB. What is left "
                  f"is the per-packet work of libfabric's long-CTS protocol over 8800-byte "
                  f"packets (about 120 sends a MiB, each with its receive and send completions, "
                  f"an acknowledgement and libfabric's copy out of its bounce buffer) and the "
                  f"emulator's handling of each packet, not the copying of the bytes.\n")
    print("### Latency, 64-byte messages (fi_pingpong -S 64 -I 2000), usec per transfer\n")
    print("| run | median | range |")
    print("|---|---|---|")
    for label, vals in r_small.items():
        v = [x[1] for x in vals]
        print(f"| {label} | **{fmt(med(v), '.4g')}** | {f'{min(v):.4g}-{max(v):.4g}' if v else ''} |")
    print()
    print("How the emulated device gets its work: libefa's posts and polls reach it through "
          "hooks on the function pointers libibverbs calls (sim/preload/doorbell.c), so the "
          "program's own threads move the bytes; the device thread keeps the timers and serves "
          "what comes while the program is elsewhere. The start-up cost for processes that never "
          "create a QP is in the emulator section (`scripts/bench-emulator.sh`).")


if __name__ == "__main__":
    main()
