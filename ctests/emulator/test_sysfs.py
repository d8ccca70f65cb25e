# SPDX-License-Identifier: MIT
"""Programs that read /sys by absolute path see the emulated host's.

Usage: test_sysfs.py EFAP2P files|libfabric

files: inside `efap2p sim --machine p5.48xlarge`, unmodified programs (cat,
       ls, readlink, stat, test, Python's os functions, libc's realpath,
       canonicalize_file_name and scandir through ctypes) read the model's
       DMI identity (product_name p5.48xlarge, the EC2 instance ID in
       board_asset_tag), its 32 RDMA devices under /sys/class/infiniband,
       the PCI path of rdmap79s0 (0000:4f:00.0 below 0000:44:01.1 and
       the switch 45:00.0/46:01.0, NUMA node 0), its kernel modules, its
       192 CPUs; the parts of /sys the model does not describe (network
       interfaces, huge pages) are this host's.
libfabric: two emulated hosts sharing a fabric, fi_pingpong -p efa with
       FI_LOG_LEVEL=info: the EFA provider takes each host's ID from its
       board_asset_tag (libfabric 1.18+, ctests/stack.py: HOST_ID; skipped,
       77, before), and each side receives the other's in the handshake.
"""

import os
import re
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
DEV = "/sys/devices/pci0000:44/0000:44:01.1/0000:45:00.0/0000:46:01.0/0000:4f:00.0"

# runs inside the emulated host; prints key=value lines
SHELL = r'''
set -u
t=$SYSFS_PATH
echo "product=$(cat /sys/devices/virtual/dmi/id/product_name)"
echo "class_product=$(cat /sys/class/dmi/id/product_name)"
echo "tag=$(cat /sys/devices/virtual/dmi/id/board_asset_tag)"
echo "tree_tag=$(cat $t/devices/virtual/dmi/id/board_asset_tag)"
echo "ib=$(ls /sys/class/infiniband | wc -l)"
echo "verbs=$(ls -d /sys/class/infiniband_verbs/uverbs* | wc -l)"
echo "device=$(readlink -f /sys/class/infiniband/rdmap79s0/device)"
echo "link=$(readlink /sys/bus/pci/devices/0000:4f:00.0)"
echo "numa=$(cat /sys/class/infiniband/rdmap79s0/device/numa_node)"
echo "vendor=$(cat /sys/bus/pci/devices/0000:4f:00.0/vendor)"
echo "type=$(stat -c %F /sys/class/infiniband/rdmap79s0/device/vendor)"
test -e /sys/module/efa && echo module_efa=yes
test -e /sys/module/nvidia && echo module_nvidia=yes
echo "cpus=$(cat /sys/devices/system/cpu/online)"
echo "nodes=$(cat /sys/devices/system/node/online)"
echo "net=$(ls /sys/class/net | tr '\n' ' ')"
echo "hugepages=$(ls /sys/kernel/mm/hugepages 2>/dev/null | tr '\n' ' ')"
echo "absent=$(cat /sys/class/infiniband/mlx5_0/ports/1/state 2>&1 >/dev/null | grep -c 'No such file')"
'''

PYTHON = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.realpath.restype = ctypes.c_char_p
libc.realpath.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
buf = ctypes.create_string_buffer(4096)
print("c_realpath=" + libc.realpath(b"/sys/class/infiniband/rdmap79s0/device", buf).decode())
libc.canonicalize_file_name.restype = ctypes.c_void_p
p = libc.canonicalize_file_name(b"/sys/bus/pci/devices/0000:4f:00.0")
print("c_canonical=" + ctypes.string_at(p).decode())
libc.free(ctypes.c_void_p(p))
names = ctypes.POINTER(ctypes.c_void_p)()
print("c_scandir=%d" % libc.scandir(b"/sys/class/infiniband", ctypes.byref(names), None, None))
print("py_realpath=" + os.path.realpath("/sys/class/infiniband/rdmap79s0/device"))
print("py_listdir=%d" % len(os.listdir("/sys/class/infiniband_verbs")))
with open("/sys/devices/virtual/dmi/id/sys_vendor") as f:
    print("py_vendor=" + f.read().strip())
print("py_exists_mlx=%s" % os.path.exists("/sys/class/infiniband/mlx5_0"))
'''


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def files(efap2p):
    sim = [efap2p, "sim", "--machine", "p5.48xlarge", "--"]
    out = subprocess.run(sim + ["bash", "-c", SHELL], capture_output=True, text=True, timeout=TIMEOUT)
    py = subprocess.run(sim + ["/usr/bin/python3", "-c", PYTHON], capture_output=True, text=True,
                        timeout=TIMEOUT)
    print(out.stdout + out.stderr + py.stdout + py.stderr)
    if out.returncode or py.returncode:
        fail(f"the programs inside the emulated host failed ({out.returncode}, {py.returncode})")
    got = dict(l.split("=", 1) for l in (out.stdout + py.stdout).splitlines() if "=" in l)
    host_net = " ".join(sorted(os.listdir("/sys/class/net")))
    host_huge = " ".join(sorted(os.listdir("/sys/kernel/mm/hugepages"))) if os.path.isdir(
        "/sys/kernel/mm/hugepages") else ""
    want = {
        "product": "p5.48xlarge", "class_product": "p5.48xlarge", "py_vendor": "Amazon EC2",
        "tag": got.get("tree_tag"), "ib": "32", "verbs": "32", "py_listdir": "33",  # + abi_version
        "device": DEV, "c_realpath": DEV, "py_realpath": DEV, "c_canonical": DEV,
        "link": "../../../devices/pci0000:44/0000:44:01.1/0000:45:00.0/0000:46:01.0/0000:4f:00.0",
        "numa": "0", "vendor": "0x1d0f", "type": "regular file", "module_efa": "yes",
        "module_nvidia": "yes", "cpus": "0-191", "nodes": "0-1", "c_scandir": "34",  # . and ..
        "absent": "1", "py_exists_mlx": "False",
    }
    bad = [f"{k}: {got.get(k)!r}, want {v!r}" for k, v in want.items() if got.get(k) != v]
    if not re.fullmatch(r"i-0[0-9a-f]{16}", got.get("tag", "")):
        bad.append(f"board_asset_tag {got.get('tag')!r}: want an EC2 instance ID")
    if " ".join(sorted(got.get("net", "").split())) != host_net:
        bad.append(f"/sys/class/net inside {got.get('net')!r}: want this host's {host_net!r}")
    if " ".join(sorted(got.get("hugepages", "").split())) != host_huge:
        bad.append(f"/sys/kernel/mm/hugepages inside {got.get('hugepages')!r}: want this host's")
    if bad:
        fail("; ".join(bad))
    print("files: the emulated host's DMI, RDMA devices, PCI paths, modules and CPUs; this host's network")


def libfabric(efap2p):
    st = stack.detect()
    if not st.has("HOST_ID"):
        print(f"libfabric {'.'.join(map(str, st.libfabric or ('none',)))} reads no host id "
              f"({'.'.join(map(str, stack.BEHAVIOURS['HOST_ID'][1]))} does)")
        sys.exit(77)
    fi = shutil.which("fi_pingpong")
    port = free_port()
    args = [fi, "-p", "efa", "-e", "rdm", "-S", "64", "-I", "3"]
    if st.has("EFA_DIRECT"):
        args += ["-f", "efa"]  # the fabric with libfabric's handshake
    env = dict(os.environ, FI_LOG_LEVEL="info", FI_LOG_PROV="efa")
    env.pop("LD_PRELOAD", None)
    tag = "cat \"$SYSFS_PATH/devices/virtual/dmi/id/board_asset_tag\"; exec \"$@\""
    fabric = tempfile.mkdtemp(prefix="efap2p-fabric-")
    server = None
    try:
        sim = [efap2p, "sim", "--machine", "p5.48xlarge", "--fabric", fabric, "--", "sh", "-c", tag, "sh"]
        # the server's log goes to a file: info logging fills a pipe nobody
        # reads while the client runs, and the server would stop in write
        slog = tempfile.TemporaryFile("w+")
        server = subprocess.Popen(sim + args + ["-B", str(port)], env=env, stdout=slog,
                                  stderr=subprocess.STDOUT, text=True)
        end = time.monotonic() + TIMEOUT
        while not listening(port) and server.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        client = subprocess.run(sim + args + ["-P", str(port), "127.0.0.1"], env=env, capture_output=True,
                                text=True, timeout=TIMEOUT)
        try:
            server.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        slog.seek(0)
        sout = slog.read()
        slog.close()
    finally:
        if server and server.poll() is None:
            server.kill()
            server.wait()
        shutil.rmtree(fabric, ignore_errors=True)
    cout = client.stdout + client.stderr
    ids = {}
    for who, out in (("server", sout), ("client", cout)):
        first = out.splitlines()[0] if out else ""
        own = re.findall(r"host_id: (i-[0-9a-f]{17})", out)
        peer = re.findall(r"Received peer host id: (i-[0-9a-f]{17})", out)
        ids[who] = (first, own, peer)
        print(f"{who}: board_asset_tag {first}, its host id {own}, the peer's {peer}")
        if "Cannot open host id file" in out or "Failed to read host id" in out:
            fail(f"the {who}'s libfabric could not read the emulated host's board_asset_tag")
    (stag, sown, speer), (ctag, cown, cpeer) = ids["server"], ids["client"]
    if server.returncode or client.returncode:
        fail(f"fi_pingpong exited {server.returncode}, {client.returncode}:\n{sout}\n{cout}")
    if stag == ctag or not sown or not cown or set(sown) != {stag} or set(cown) != {ctag}:
        fail(f"host ids: server {sown} (tag {stag}), client {cown} (tag {ctag})")
    if speer and set(speer) != {ctag} or cpeer and set(cpeer) != {stag} or not (speer or cpeer):
        fail(f"peer host ids: the server received {speer}, the client {cpeer}")
    print("libfabric: each emulated host's id from its board_asset_tag, and the peer's in the handshake")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("files", "libfabric"):
        sys.exit(__doc__)
    {"files": files, "libfabric": libfabric}[sys.argv[2]](os.path.abspath(sys.argv[1]))


if __name__ == "__main__":
    main()
