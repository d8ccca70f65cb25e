# SPDX-License-Identifier: MIT
"""pyverbs with libefap2p preloaded, inside `efap2p sim`: device_caps of
EfaContext(name=...).query_efa_device() has bit 31 (P2P_DMA) exactly on the
NICs the model lets reach an accelerator with true P2P.

Usage: efap2p sim --machine MODEL -- /usr/bin/python3 test_pyverbs_caps.py MODEL
(with LD_PRELOAD naming libefap2p.so when efap2p sim starts).

By hand from the models: p5.48xlarge, all 32 NICs (each shares a PCIe
switch with an H100; nvidia allows peers in a passthrough VM);
intel-acs-switch, none (every path crosses a non-whitelisted Intel host
bridge: refused, and amdgpu bounces through system memory);
arm64-grace-peermem, its one NIC (dma-buf refused, but the EFA driver's p2p
attribute names the NVIDIA peer-memory provider: true P2P by address);
grace-no-peermem (ctests/shim/grace-no-peermem.json: the same host without
the attribute), none.
"""

import sys

from pyverbs.device import get_device_list
from pyverbs.providers.efa.efadv import EfaContext

P2P_DMA = 1 << 31
WANT = {"p5.48xlarge": (32, True), "intel-acs-switch": (4, False),
        "arm64-grace-peermem": (1, True), "grace-no-peermem": (1, False)}

model = sys.argv[1]
count, reaches = WANT[model]
names = sorted(d.name.decode() for d in get_device_list())
failures = []
if len(names) != count:
    failures.append(f"{len(names)} devices, want {count}")
for name in names:
    with EfaContext(name=name) as ctx:
        caps = ctx.query_efa_device().device_caps
    if bool(caps & P2P_DMA) != reaches:
        failures.append(f"{name}: device_caps {caps:#x}, P2P_DMA wanted {reaches}")
print(f"{model}: {len(names)} EFA devices, P2P_DMA {'set' if reaches else 'clear'} on each")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
