# SPDX-License-Identifier: MIT
"""ibv_devices and ibv_devinfo, unmodified, inside `efap2p sim` (p5.48xlarge).

Usage: test_ibv_tools.py PATH/TO/efap2p

The expected values were read by hand from models/machines/p5.48xlarge.json:
32 EFA NICs 1d0f:efa1 on buses 4f-52, 60-63, 71-74, 82-85, 93-96, a4-a7,
b5-b8, c6-c9 (device 00.0), named rdmap<bus in decimal>s0, every one with
the machine's efa_defaults and the built-in attributes models/efa.go gives
(max_qp 256, max_mr_size 0x3fffff000000, fw 0.0.0.0, port MTU 4096); the
node GUID and GID carry the bus in their low bytes.
"""

import re
import subprocess
import sys
import unittest

EFAP2P = None

# (ibdev, PCI bus) of the 32 NICs, by hand from the model file.
NICS = [(f"rdmap{int(b, 16)}s0", b) for b in (
    "4f 50 51 52 60 61 62 63 71 72 73 74 82 83 84 85 "
    "93 94 95 96 a4 a5 a6 a7 b5 b6 b7 b8 c6 c7 c8 c9").split()]


def sim(*command, env=None):
    return subprocess.run([EFAP2P, "sim", "--machine", "p5.48xlarge", "--", *command],
                          capture_output=True, text=True, env=env, timeout=300)


class IbvTools(unittest.TestCase):
    def test_ibv_devices(self):
        r = sim("ibv_devices")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "", "the emulator must be silent without EFASIM_TRACE")
        rows = dict(line.split() for line in r.stdout.splitlines()[2:] if line.strip())
        want = {name: f"000000000000{bus}00" for name, bus in NICS}
        self.assertEqual(rows, want)

    def test_ibv_devinfo(self):
        r = sim("ibv_devinfo", "-v")
        self.assertEqual(r.returncode, 0, r.stderr)
        blocks = {}
        for block in re.split(r"^hca_id:", r.stdout, flags=re.M)[1:]:
            name, _, body = block.partition("\n")
            blocks[name.strip()] = body
        self.assertEqual(sorted(blocks), sorted(n for n, _ in NICS))
        common = {
            "transport": "unspecified (4)",
            "fw_ver": "0.0.0.0",
            "vendor_id": "0x1d0f",
            "vendor_part_id": "61345",  # 0xefa1
            "hw_ver": "0xEFA1",
            "phys_port_cnt": "1",
            "max_mr_size": "0x3fffff000000",
            "page_size_cap": "0xfffff000",
            "max_qp": "256",
            "max_qp_wr": "4096",  # min(max_sq_wr 4096, max_rq_wr 32768)
            "max_sge": "2",       # min(max_sq_sge 2, max_rq_sge 3)
            "max_cq": "512",
            "max_mr": "262144",
            "max_pd": "256",
            "max_ah": "1024",
            "state": "PORT_ACTIVE (4)",
            "max_mtu": "4096 (5)",
            "active_mtu": "4096 (5)",
            "link_layer": "Unspecified",
        }
        for name, bus in NICS:
            fields = dict(re.findall(r"^\s+(\w+):\s+(.*?)\s*$", blocks[name], flags=re.M))
            for key, value in common.items():
                self.assertEqual(fields.get(key), value, f"{name} {key}")
            self.assertEqual(fields["node_guid"], f"0000:0000:0000:{bus}00", name)
            self.assertIn(f"GID[  0]:\t\tfe80:0000:0000:0000:0000:0000:{bus}00:0001", blocks[name])

    def test_trace(self):
        r = sim("ibv_devices", env={"PATH": "/usr/bin:/bin", "EFASIM_TRACE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("socket(AF_NETLINK, NETLINK_RDMA) -> EPROTONOSUPPORT", r.stderr)
        self.assertRegex(r.stderr, r"efasim\[\d+\]: stat /dev/infiniband/uverbs31: character device 231:223")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_ibv_tools.py PATH/TO/efap2p")
    EFAP2P = sys.argv.pop(1)
    unittest.main(verbosity=2)
