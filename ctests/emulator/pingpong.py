# SPDX-License-Identifier: MIT
"""libfabric's own fi_pingpong (Debian's libfabric-bin) over emulated EFA.

Usage: pingpong.py EFAP2P MODE one|two [LIBEFAP2P]

MODE:
  rdm          an rdm endpoint of the efa fabric (libfabric's own protocols
               over SRD: every size up to 1 MiB); `-f efa` where libfabric
               also has efa-direct (ctests/stack.py: EFA_DIRECT, 2.1+)
  rdm-direct   the efa-direct fabric (`-f efa-direct`): the device's sends
               only, so the sizes up to its max message (8800): up to 4k;
               skipped (77) where libfabric has no efa-direct
  rdm-default  no fabric named: the one libfabric lists first, as a user
               gets it (efa-direct from 2.1, efa before)
  dgram        a dgram endpoint (UD): the sizes up to the MTU

one: server and client in one emulated host (one `efap2p sim`), the
     same-host shortcut through libfabric's shm provider turned off
     (FI_EFA_ENABLE_SHM_TRANSFER=0) so that the bytes cross the emulated
     device;
two: server and client on two emulated hosts sharing a fabric directory
     (two `efap2p sim --fabric DIR`), each with GIDs of its own.
With LIBEFAP2P, the library is preloaded into both programs.

Both programs must exit 0 with data checks on (-c) and print their size
table; every wait is bounded, so a hang fails the test.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from ports import free_port, listening  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import stack  # noqa: E402

TIMEOUT = 60
ITERATIONS = "5"
# the last of the sizes fi_pingpong runs by default ("all") that the
# endpoint takes: the efa fabric's rdm goes up to 1 MiB (libfabric's
# long-message protocols), efa-direct's up to the device's max message
# (8800), dgram up to the MTU
LAST_SIZE = {"efa": "1m", "efa-direct": "4k", "dgram": "4k"}
MODES = ("rdm", "rdm-direct", "rdm-default", "dgram")


def fi_args(mode):
    """fi_pingpong's arguments for a mode, and the last size it must report;
    None when this libfabric has no such mode."""
    fi = shutil.which("fi_pingpong")
    if not fi:
        sys.exit("fi_pingpong not found: 'make test-deps' installs libfabric-bin")
    st = stack.detect()
    args = [fi, "-p", "efa", "-e", "dgram" if mode == "dgram" else "rdm", "-I", ITERATIONS, "-c"]
    if mode == "dgram":
        return args, LAST_SIZE["dgram"]
    if mode == "rdm-default":
        return args, LAST_SIZE[st.efa_default_fabric()]
    fabric = "efa-direct" if mode == "rdm-direct" else "efa"
    if st.has("EFA_DIRECT"):
        return args + ["-f", fabric], LAST_SIZE[fabric]
    if fabric == "efa-direct":
        return None, None
    return args, LAST_SIZE[fabric]  # the only EFA fabric; no -f before 2.1


def wait_listening(port, server):
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        if listening(port):
            return True
        if server.poll() is not None:
            return False
        time.sleep(0.02)
    return False


def run_pair(server_cmd, client_cmd, port, env):
    server = subprocess.Popen(server_cmd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        if not wait_listening(port, server):
            server.kill()
            out = server.communicate()[0]
            sys.exit(f"the server never listened on port {port}:\n{out}")
        try:
            client = subprocess.run(client_cmd, env=env, capture_output=True, text=True,
                                    timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            sys.exit(f"the client did not finish within {TIMEOUT} s:\n{e.stdout}\n{e.stderr}")
        try:
            sout = server.communicate(timeout=TIMEOUT)[0]
        except subprocess.TimeoutExpired:
            server.kill()
            sout = server.communicate()[0]
            sys.exit(f"the server did not finish within {TIMEOUT} s:\n{sout}")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return server.returncode, sout, client.returncode, client.stdout + client.stderr


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[2] not in MODES or sys.argv[3] not in ("one", "two"):
        sys.exit(__doc__)
    efap2p, mode, hosts = sys.argv[1:4]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if len(sys.argv) == 5:
        env["LD_PRELOAD"] = sys.argv[4]
    args, last = fi_args(mode)
    if args is None:
        print(f"libfabric {'.'.join(map(str, stack.detect().libfabric or ('none',)))} has no "
              "efa-direct fabric (2.1 has)")
        sys.exit(77)
    port = free_port()
    server = args + ["-B", str(port)]
    client = args + ["-P", str(port), "127.0.0.1"]
    fabric = None
    if hosts == "one":
        env["FI_EFA_ENABLE_SHM_TRANSFER"] = "0"
        # one emulated host: both programs under one `efap2p sim`, started
        # by this script again inside it
        inner = [sys.executable, os.path.abspath(__file__), "--inner", mode, str(port)]
        rc = subprocess.run([efap2p, "sim", "--"] + inner, env=env, timeout=3 * TIMEOUT).returncode
        sys.exit(rc)
    fabric = tempfile.mkdtemp(prefix="efap2p-fabric-")
    try:
        sim = [efap2p, "sim", "--fabric", fabric, "--"]
        result = run_pair(sim + server, sim + client, port, env)
    finally:
        shutil.rmtree(fabric, ignore_errors=True)
    check(last, *result)


def check(last, src, sout, crc, cout):
    print("server:\n" + sout + "client:\n" + cout)
    ok = True
    for who, rc, out in (("server", src, sout), ("client", crc, cout)):
        rows = [l.split()[0] for l in out.splitlines() if l and l[0].isdigit()]
        if rc != 0:
            print(f"FAIL: the {who} exited with {rc}")
            ok = False
        elif not rows or rows[-1] != last:
            print(f"FAIL: the {who} did not report every size up to {last}: {rows}")
            ok = False
    sys.exit(0 if ok else 1)


def inner():
    mode, port = sys.argv[2], int(sys.argv[3])
    args, last = fi_args(mode)
    check(last, *run_pair(args + ["-B", str(port)], args + ["-P", str(port), "127.0.0.1"], port,
                        dict(os.environ)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        inner()
    else:
        main()
