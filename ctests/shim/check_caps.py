# SPDX-License-Identifier: MIT
"""The same unmodified binary (p2p_caps), run plainly and with libefap2p
preloaded inside `efap2p sim`: every line identical except the P2P_DMA bit,
set on every EFA device or on none as the model says.

Usage: check_caps.py EFAP2P LIBEFAP2P P2P_CAPS MODEL|MODEL.json yes|no

Expected by hand from the models: p5.48xlarge puts each EFA NIC on a PCIe
switch with an H100 (nvidia, allowed in a passthrough VM): every NIC gets
true P2P. intel-acs-switch routes every GPU-NIC path through a host bridge
that is not whitelisted on an Intel CPU: NOT_SUPPORTED, and amdgpu bounces
the buffer through system memory: no NIC gets true P2P.
arm64-grace-peermem: the dma-buf path is refused (arm64, Grace root ports
not whitelisted; NVIDIA's flagged-chipset rule), but the out-of-tree EFA
driver's p2p attribute names the NVIDIA provider, which serves the H100's
memory by address: true P2P. grace-no-peermem.json, the same host with
the in-tree driver (no p2p attribute): only the refused dma-buf path: no.
synthetic-2000 (models.Synthetic): each EFA NIC shares a switch with an
H100 under nvidia, which allows the peer (no coherent link, no override,
not a flagged chipset: its rule consults no PCI path); the switch's other
H100 is under vfio-pci, which refuses a pinned importer. So every one of
its 258 NICs, more than the library keeps answers for, gets true P2P.
"""

import os
import re
import subprocess
import sys

efap2p, lib, prog, model, want = sys.argv[1:6]


def run(preload):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = lib  # efap2p sim appends libefasim.so
    where = ["--model", model] if model.endswith(".json") else ["--machine", model]
    out = subprocess.run([efap2p, "sim", *where, "--", prog],
                         env=env, check=True, capture_output=True, text=True)
    return out.stdout.splitlines()


line_re = re.compile(r"^(\S+): P2P_DMA (yes|no ) \(device_caps 0x([0-9a-f]{8});(.*)\)$")
plain, shim = run(False), run(True)
failures = []
if len(plain) != len(shim) or not plain:
    failures.append(f"{len(plain)} lines plain, {len(shim)} preloaded")
for p, s in zip(plain, shim):
    mp, ms = line_re.match(p), line_re.match(s)
    if not mp or not ms:
        failures.append(f"unexpected line: {p!r} / {s!r}")
        continue
    if mp.group(2) != "no ":
        failures.append(f"{mp.group(1)}: P2P_DMA without the library")
    caps = int(mp.group(3), 16)
    expect = caps | (1 << 31) if want == "yes" else caps
    if (ms.group(1), int(ms.group(3), 16), ms.group(4)) != (mp.group(1), expect, mp.group(4)):
        failures.append(f"preloaded {s!r}, plain {p!r}, P2P_DMA wanted: {want}")
print(f"{len(plain)} EFA devices compared, P2P_DMA {want} on each")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
