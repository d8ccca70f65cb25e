# SPDX-License-Identifier: MIT
"""pyverbs (Debian's, under /usr/bin/python3) inside `efap2p sim`.

Usage: efap2p sim ... -- /usr/bin/python3 test_pyverbs.py MODEL
where MODEL is p5.48xlarge or efasim-test-refused (ctests/emulator/refused.json).

The expectations were written by hand from the model files. efadv caps are
libefa's translation of the kernel bits (RDMA_READ -> 1, RNR_RETRY -> 2,
CQ_WITH_SGID -> 4, RDMA_WRITE -> 8, UNSOLICITED_WRITE_RECV -> 0x10), less
the bits the installed libefa does not know (ctests/stack.py).
"""

import ctypes
import errno
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import stack  # noqa: E402

import pyverbs.enums as e
from pyverbs.mr import MR, DmaBufMR
from pyverbs.pd import PD
from pyverbs.providers.efa.efadv import EfaContext
from pyverbs.pyverbs_error import PyverbsRDMAError

MiB = 1 << 20

# name -> (caps, max_sq_wr, max_rq_wr, max_sq_sge, max_rq_sge, inline, max_rdma_size),
# caps as the kernel reports them (efadv bits), before libefa drops those it
# does not know
P5_NIC = (0x1f, 4096, 32768, 2, 3, 32, 1 << 30)
MODELS = {
    "p5.48xlarge": {
        # efa_defaults: RDMA_READ, RNR_RETRY, CQ_NOTIFICATIONS,
        # DATA_POLLING_128, RDMA_WRITE, UNSOLICITED_WRITE_RECV; the driver
        # sets CQ_WITH_SGID for every device; its efa driver, AWS's
        # out-of-tree 2.17.3g, answers as 6.13's and relays
        # UNSOLICITED_WRITE_RECV (in-tree from 6.10)
        "nics": {"rdmap79s0": P5_NIC, "rdmap149s0": P5_NIC, "rdmap201s0": P5_NIC},
        # GPU 53:00.0 (nvidia) shares switch 45:00.0 with rdmap79s0 (4f:00.0)
        "accepted": [("rdmap79s0", "0000:53:00.0", "nvidia"),
                     ("rdmap201s0", "0000:53:00.0", "nvidia")],
        "refused": [],
        "remote_write": "rdmap79s0",  # RDMA_WRITE in the caps
    },
    "efasim-test-refused": {
        # RDMA_READ, RNR_RETRY, UNSOLICITED_WRITE_RECV (the model's kernel is
        # the newest) and RDMA_READ, RDMA_WRITE; + CQ_WITH_SGID
        "nics": {"rdmap3s0": (0x17, 4096, 32768, 2, 3, 32, 1 << 30),
                 "rdmap5s0": (0xd, 2048, 8192, 1, 2, 64, 8 * MiB)},
        "accepted": [("rdmap3s0", "0000:04:00.0", "nvidia"),   # same switch: p2p
                     ("rdmap3s0", "0000:07:00.0", "amdgpu")],  # bounced, accepted
        "refused": [("rdmap3s0", "0000:06:00.0"),   # habanalabs refuses NOT_SUPPORTED
                    ("rdmap5s0", "0000:04:00.0")],  # the NIC blocks peers
        "remote_write": "rdmap5s0",
    },
}

MODEL = None
lib = ctypes.CDLL(None, use_errno=True)  # sees the preloaded libefasim.so
lib.efasim_dmabuf_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
lib.efasim_dmabuf_create.restype = ctypes.c_int
lib.efasim_reg_dmabuf_mr_calls.restype = ctypes.c_ulong


def dmabuf(owner, size=4 * MiB):
    fd = lib.efasim_dmabuf_create(owner.encode(), None, size)
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"efasim_dmabuf_create({owner})")
    return fd


class Pyverbs(unittest.TestCase):
    def setUp(self):
        self.model = MODELS[MODEL]
        self.fds = []

    def tearDown(self):
        for fd in self.fds:
            os.close(fd)

    def test_query_efa_device(self):
        mask = stack.detect().efadv_caps_mask()
        for name, want in self.model["nics"].items():
            want = (want[0] & mask,) + want[1:]
            with EfaContext(name=name) as ctx:
                a = ctx.query_efa_device()
                got = (a.device_caps, a.max_sq_wr, a.max_rq_wr, a.max_sq_sge,
                       a.max_rq_sge, a.inline_buf_size, a.max_rdma_size)
                self.assertEqual(got, want, name)
                self.assertEqual(ctx.query_device().vendor_id, 0x1d0f, name)

    def test_pd_and_mr(self):
        for name in self.model["nics"]:
            with EfaContext(name=name) as ctx, PD(ctx) as pd:
                with MR(pd, 64 * 1024, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ) as mr:
                    self.assertEqual(mr.lkey, mr.rkey)
                    self.assertNotEqual(mr.lkey, 0)
                    mr.write(b"hello", 5)
                    self.assertEqual(mr.read(5, 0), b"hello")

    def test_remote_write(self):
        with EfaContext(name=self.model["remote_write"]) as ctx, PD(ctx) as pd:
            with MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE):
                pass

    def test_dmabuf_accepted(self):
        for nic, owner, exporter in self.model["accepted"]:
            fd = dmabuf(owner)
            self.fds.append(fd)
            with open(f"/proc/self/fdinfo/{fd}") as f:
                self.assertIn(f"exp_name:\t{exporter}\n", f.read())
            self.assertEqual(os.fstat(fd).st_size, 4 * MiB)
            before = lib.efasim_reg_dmabuf_mr_calls()
            with EfaContext(name=nic) as ctx, PD(ctx) as pd:
                with DmaBufMR(pd, 2 * MiB, e.IBV_ACCESS_LOCAL_WRITE, dmabuf=fd, offset=MiB) as mr:
                    self.assertNotEqual(mr.lkey, 0, (nic, owner))
            self.assertEqual(lib.efasim_reg_dmabuf_mr_calls() - before, 1)

    def test_dmabuf_refused(self):
        for nic, owner in self.model["refused"]:
            fd = dmabuf(owner)
            self.fds.append(fd)
            with EfaContext(name=nic) as ctx, PD(ctx) as pd:
                with self.assertRaises(PyverbsRDMAError) as cm:
                    DmaBufMR(pd, MiB, e.IBV_ACCESS_LOCAL_WRITE, dmabuf=fd)
                self.assertEqual(cm.exception.error_code, errno.EOPNOTSUPP, (nic, owner))

    def test_dmabuf_not_a_dmabuf(self):
        nic = next(iter(self.model["nics"]))
        r, w = os.pipe()
        self.fds += [r, w]
        with EfaContext(name=nic) as ctx, PD(ctx) as pd:
            with self.assertRaises(PyverbsRDMAError) as cm:
                DmaBufMR(pd, MiB, e.IBV_ACCESS_LOCAL_WRITE, dmabuf=r)
            self.assertEqual(cm.exception.error_code, errno.EINVAL)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MODELS:
        sys.exit(f"usage: test_pyverbs.py {'|'.join(MODELS)}")
    MODEL = sys.argv.pop(1)
    if not lib.efasim_active():
        sys.exit("not inside an emulated host: run under 'efap2p sim'")
    unittest.main(verbosity=2)
