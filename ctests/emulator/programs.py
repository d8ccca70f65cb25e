# SPDX-License-Identifier: MIT
"""Programs nobody here wrote, over emulated EFA: one emulated host, or two
sharing a fabric.

Usage: programs.py EFAP2P one|two PROGRAM [BINDIR]

PROGRAM is one of the scenarios below; BINDIR holds the programs built
here (mpi_check, fabtest). one: both sides under one `efap2p sim`
(FI_EFA_ENABLE_SHM_TRANSFER=0, so that libfabric's same-host shortcut does
not bypass the device; perftest and ibv_ud_pingpong use two devices); two:
each side under its own `efap2p sim --fabric DIR`, another host with GIDs of
its own (Open MPI starts its second node's daemon there through an rsh
agent). Every wait is bounded: a hang fails.

  ud_pingpong        rdma-core's ibv_ud_pingpong -g 0, data checked
  ud_pingpong_events the same sleeping on CQ events (a completion channel)
  ud_pingpong_nogid  without -g: the address handles have no GID, the
                     device drops every send, nothing completes, and the
                     emulator says why
  send_bw_srd, send_lat_srd, send_bw_ud, send_lat_ud, read_bw_srd
                     perftest (-c SRD, -c UD; UD bandwidth with -Q 1: libefa
                     refuses unsignaled sends)
  write_lat_srd      perftest's ib_write_lat -c SRD -I 0 (rdma-core 52+,
                     whose perftest writes over SRD)
  qperf_ud_lat       qperf's UD latency test gets past the completion channel
                     it needs to the efa driver's refusal of its memory
                     region (qperf asks for REMOTE_ATOMIC, which EFA has not):
                     as far as it gets on EFA hardware
  mpi_mtl            Open MPI, pml cm + mtl ofi (efa): ping-pong to 4 MiB and
                     Allreduce, mpi_check
  mpi_btl            Open MPI, pml ob1 + btl ofi (two-sided mode), and
                     MPI_Put/MPI_Get through osc rdma over btl ofi
  fabtest_rdm, fabtest_dgram
                     the fabtests checks written against libfabric (fabtest)
  trn2_nics          trn2.48xlarge: ibv_devices and fi_info -p efa list its 16
                     NICs (PCI ID efa3)
  trn2_send_bw_srd, trn2_fabtest_rdm
                     perftest and fabtest between trn2's NICs
The trn2 scenarios need a libefa that claims efa3 (rdma-core 53+,
ctests/stack.py: EFA3); elsewhere they say why and exit 77 (skipped). The
programs run with ctests/stack.py's EFASTACK_* variables (fabtest reads
them).
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from ports import free_port, listening  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import stack  # noqa: E402

TIMEOUT = 120
P5 = "p5.48xlarge"
TRN2 = "trn2.48xlarge"


def perftest(tool, conn, extra=(), devs=("rdmap79s0", "rdmap80s0")):
    def cmds(port, hosts):
        base = [tool, "-c", conn, "-x", "0", "-n", "200", "-p", str(port)] + list(extra)
        sdev, cdev = devs if hosts == "one" else (devs[0], devs[0])
        return base + ["-d", sdev], base + ["-d", cdev, "127.0.0.1"]
    return {"cmds": cmds, "listens": True, "ok": results_row}


def results_row(out):
    """perftest: a row of figures under the '#bytes' header."""
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if l.strip().startswith("#bytes") and i + 1 < len(lines) and lines[i + 1].split()[:1] and \
                lines[i + 1].split()[0].isdigit():
            return True
    return False


def ud_pingpong(extra=(), gid=True):
    def cmds(port, hosts):
        base = ["ibv_ud_pingpong", "-p", str(port), "-n", "200", "-c"] + list(extra)
        if gid:
            base += ["-g", "0"]
        sdev, cdev = ("rdmap79s0", "rdmap80s0") if hosts == "one" else ("rdmap79s0", "rdmap79s0")
        return base + ["-d", sdev], base + ["-d", cdev, "127.0.0.1"]
    return {"cmds": cmds, "listens": True, "ok": lambda out: "bytes in" in out}


def qperf(port, hosts):
    base = ["qperf", "-lp", str(port)]
    return base, base + ["-t", "1", "-li", "rdmap80s0:1" if hosts == "one" else "rdmap79s0:1",
                         "-ri", "rdmap79s0:1", "127.0.0.1", "ud_lat"]


def fabtest(ep):
    def cmds(port, hosts):
        prog = os.path.join(BINDIR, "fabtest")
        return [prog, "-e", ep, "-p", str(port)], [prog, "-e", ep, "-p", str(port), "127.0.0.1"]
    return {"cmds": cmds, "listens": True, "ok": lambda out: "all checks passed" in out}


MPI_MCA = {
    "mpi_mtl": ["--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "efa"],
    "mpi_btl": ["--mca", "pml", "ob1", "--mca", "btl", "ofi,self", "--mca", "btl_ofi_provider_include",
                "efa", "--mca", "btl_ofi_mode", "2", "--mca", "osc", "rdma", "-x", "MPI_CHECK_ONE_SIDED"],
}

SCENARIOS = {
    "ud_pingpong": ud_pingpong(),
    "ud_pingpong_events": ud_pingpong(("-e",)),
    "ud_pingpong_nogid": dict(ud_pingpong(gid=False), hangs=True),
    "send_bw_srd": perftest("ib_send_bw", "SRD"),
    "send_lat_srd": perftest("ib_send_lat", "SRD"),
    "send_bw_ud": perftest("ib_send_bw", "UD", ("-Q", "1")),
    "send_lat_ud": perftest("ib_send_lat", "UD"),
    "read_bw_srd": perftest("ib_read_bw", "SRD"),
    # RDMA write from registered memory: perftest's default inline data (32
    # bytes on EFA) makes rdma-core 56 post inline RDMA writes, which a
    # 64-byte WQE cannot carry (the device's error completion, see
    # sim/preload/README.md)
    "write_lat_srd": perftest("ib_write_lat", "SRD", ("-I", "0")),
    "qperf_ud_lat": {"cmds": qperf, "listens": True, "server_stays": True,
                     "ok": lambda out: "failed to allocate memory region: Operation not supported" in out
                     and "completion channel" not in out},
    "fabtest_rdm": fabtest("rdm"),
    "fabtest_dgram": fabtest("dgram"),
    # trn2's first and last NIC, on different root buses and NUMA nodes
    "trn2_send_bw_srd": dict(perftest("ib_send_bw", "SRD", devs=("rdmap86s0", "rdmap246s0")),
                             machine=TRN2, needs="EFA3"),
    "trn2_fabtest_rdm": dict(fabtest("rdm"), machine=TRN2, needs="EFA3"),
}
TRN2_NICS = 16


def text(x):
    return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")


def run_pair(server, client, port, env, sc):
    """Runs a server until it listens, then the client: (server status,
    output, client status, output); a side still running at the deadline is
    killed (status None)."""
    srv = subprocess.Popen(server, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + TIMEOUT
        while not listening(port) and srv.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        deadline = 8 if sc.get("hangs") else TIMEOUT
        try:
            cl = subprocess.run(client, env=env, capture_output=True, text=True, timeout=deadline)
            crc, cout = cl.returncode, cl.stdout + cl.stderr
        except subprocess.TimeoutExpired as e:
            crc, cout = None, text(e.stdout) + text(e.stderr)
        if sc.get("server_stays") or sc.get("hangs"):
            srv.terminate()
        try:
            sout = srv.communicate(timeout=TIMEOUT if crc is not None else 5)[0]
            src = srv.returncode
        except subprocess.TimeoutExpired:
            srv.kill()
            sout, src = srv.communicate()[0], None
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    return src, sout, crc, cout


def judge(name, sc, src, sout, crc, cout):
    print(f"--- server (status {src}):\n{sout}--- client (status {crc}):\n{cout}")
    if sc.get("hangs"):
        said = "dropped: an address handle without a GID" in sout + cout
        if crc is not None or not said:
            sys.exit(f"FAIL {name}: want no completion and the emulator saying why "
                     f"(client status {crc}, said {said})")
        print(f"{name}: nothing arrives, and the emulator said why")
        return
    if sc.get("server_stays"):
        # whichever side meets the refusal first says it: qperf's server
        # may fail before its client gets to it, and then the client only
        # reports that the server stopped
        if not sc["ok"](sout + cout):
            sys.exit(f"FAIL {name}: neither side's output is the expected one")
        print(f"{name}: as far as EFA hardware lets it")
        return
    for who, rc, out in (("server", src, sout), ("client", crc, cout)):
        if rc != 0 or not sc["ok"](out):
            sys.exit(f"FAIL {name}: the {who} exited with status {rc} or without its result")
    print(f"{name}: passed")


def agent_script(efap2p, fabric, d):
    """An rsh agent for mpirun: each node is another emulated host."""
    path = os.path.join(d, "efasim-rsh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# efasim-rsh HOST COMMAND...: COMMAND on another emulated host\n"
                f"shift\nexec '{efap2p}' sim --machine p5.48xlarge --fabric '{fabric}' -- sh -c \"$*\"\n")
    os.chmod(path, stat.S_IRWXU)
    return path


def mpi(name, efap2p, hosts, env):
    if name == "mpi_btl":
        env["MPI_CHECK_ONE_SIDED"] = "1"
    args = ["mpirun", "-np", "2", "--allow-run-as-root", "--oversubscribe"] + MPI_MCA[name]
    prog = os.path.join(BINDIR, "mpi_check")
    with tempfile.TemporaryDirectory(prefix="efap2p-mpi-") as d:
        if hosts == "one":
            cmd = [efap2p, "sim", "--machine", "p5.48xlarge", "--"] + args + [prog]
        else:
            fabric = os.path.join(d, "fabric")
            cmd = args + ["--host", "emulated-a,emulated-b", "--mca", "plm_rsh_agent",
                          agent_script(efap2p, fabric, d), prog]
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            sys.exit(f"FAIL {name}: mpirun did not finish within {TIMEOUT} s: {e.stdout}")
    print(r.stdout + r.stderr)
    if r.returncode != 0 or "mpi_check: all checks passed" not in r.stdout:
        sys.exit(f"FAIL {name}: mpirun exited with {r.returncode}")
    if name == "mpi_btl" and "MPI_Put and MPI_Get" not in r.stdout:
        sys.exit(f"FAIL {name}: no one-sided check")
    print(f"{name}: passed")


def trn2_nics(efap2p, env):
    """ibv_devices and fi_info inside trn2.48xlarge list its 16 NICs."""
    sim = [efap2p, "sim", "--machine", TRN2, "--"]
    devs = subprocess.run(sim + ["ibv_devices"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    names = [l.split()[0] for l in devs.stdout.splitlines() if l.strip().startswith("rdmap")]
    print(devs.stdout + devs.stderr)
    if devs.returncode != 0 or len(names) != TRN2_NICS:
        sys.exit(f"FAIL trn2_nics: ibv_devices lists {len(names)} devices, want {TRN2_NICS}")
    if shutil.which("fi_info"):
        fi = subprocess.run(sim + ["fi_info", "-p", "efa", "-t", "FI_EP_RDM"], env=env, capture_output=True,
                            text=True, timeout=TIMEOUT)
        domains = {l.split(":", 1)[1].strip() for l in fi.stdout.splitlines() if l.strip().startswith("domain:")}
        print(fi.stdout + fi.stderr)
        if fi.returncode != 0 or len(domains) != TRN2_NICS:
            sys.exit(f"FAIL trn2_nics: fi_info -p efa lists {len(domains)} rdm domains, want {TRN2_NICS}")
    print(f"trn2_nics: {TRN2_NICS} NICs in ibv_devices and fi_info")


def main():
    global BINDIR
    if len(sys.argv) == 4 and sys.argv[1] == "--inner":
        BINDIR = os.environ.get("EFASIM_PROGRAMS_BIN", "")
        name, port = sys.argv[2], int(sys.argv[3])
        sc = SCENARIOS[name]
        server, client = sc["cmds"](port, "one")
        judge(name, sc, *run_pair(server, client, port, dict(os.environ), sc))
        return
    if len(sys.argv) not in (4, 5) or sys.argv[2] not in ("one", "two") or \
            (sys.argv[3] not in SCENARIOS and sys.argv[3] not in MPI_MCA and sys.argv[3] != "trn2_nics"):
        sys.exit(__doc__)
    efap2p, hosts, name = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    BINDIR = os.path.abspath(sys.argv[4]) if len(sys.argv) == 5 else ""
    env = dict(os.environ, FI_EFA_ENABLE_SHM_TRANSFER="0", EFASIM_PROGRAMS_BIN=BINDIR)
    env.pop("LD_PRELOAD", None)
    env.pop("EFASIM_TRACE", None)
    st = stack.detect()
    env.update(st.env())
    needs = "EFA3" if name == "trn2_nics" else SCENARIOS.get(name, {}).get("needs")
    if needs and not st.has(needs):
        print(f"{name}: rdma-core {'.'.join(map(str, st.rdma_core))}: {stack.BEHAVIOURS[needs][2]} "
              f"only from {'.'.join(map(str, stack.BEHAVIOURS[needs][1]))}: skipped")
        sys.exit(77)
    if name == "trn2_nics":
        trn2_nics(efap2p, env)
        return
    if name in MPI_MCA:
        mpi(name, efap2p, hosts, env)
        return
    sc = SCENARIOS[name]
    machine = sc.get("machine", P5)
    port = free_port()
    if hosts == "one":
        inner = [sys.executable, os.path.abspath(__file__), "--inner", name, str(port)]
        rc = subprocess.run([efap2p, "sim", "--machine", machine, "--"] + inner, env=env,
                            timeout=3 * TIMEOUT).returncode
        sys.exit(rc)
    fabric = tempfile.mkdtemp(prefix="efap2p-fabric-")
    try:
        sim = [efap2p, "sim", "--machine", machine, "--fabric", fabric, "--"]
        server, client = sc["cmds"](port, "two")
        judge(name, sc, *run_pair(sim + server, sim + client, port, env, sc))
    finally:
        shutil.rmtree(fabric, ignore_errors=True)


if __name__ == "__main__":
    main()
