# SPDX-License-Identifier: MIT
"""The emulator's data path from pyverbs (Debian's, under /usr/bin/python3).

Usage: efap2p sim --model ctests/emulator/refused.json -- /usr/bin/python3 test_pyverbs_dp.py

CQs (plain, extended, EFA DV with the sender's GID), UD and SRD QPs, AHs
and efadv_query_ah, sends with immediate data, RDMA reads into host memory
and into the memory of a fake dma-buf of an allowed pair, and the errors
the device reports. The same file runs with libefap2p.so preloaded and must
give the same results.

Expected values, by hand from ctests/emulator/refused.json: rdmap3s0
(03:00.0) has RDMA_READ, RNR_RETRY, CQ_NOTIFICATIONS, CQ_WITH_SGID and no
RDMA_WRITE; rdmap5s0 (05:00.0) has RDMA_READ and RDMA_WRITE and blocks
peers; the H100 04:00.0 (nvidia) shares a switch with rdmap3s0 (p2p).
GIDs: fe80::300:1 and fe80::500:1 (the model's defaults). libefa maps
the device's status 10 (RNR) to IBV_WC_RNR_RETRY_EXC_ERR and 9 (bad
destination QPN) to IBV_WC_REM_INV_RD_REQ_ERR. What changed with the
rdma-core release (RDMA write) follows ctests/stack.py.
"""

import ctypes
import errno
import mmap
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import stack  # noqa: E402

import pyverbs.enums as e
import pyverbs.providers.efa.efa_enums as efa_e
import pyverbs.providers.efa.efadv as efa
from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ, CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.device import Context
from pyverbs.mr import MR, DmaBufMR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr, QPInitAttrEx
from pyverbs.wr import RecvWR, SendWR, SGE

QKEY = 0x11111111
MiB = 1 << 20
lib = ctypes.CDLL(None, use_errno=True)  # the preloaded libefasim.so
lib.efasim_dmabuf_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
lib.efasim_dmabuf_create.restype = ctypes.c_int


def poll(cq, timeout=5.0):
    """One work completion of a plain CQ within timeout, else a failure."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        n, wcs = cq.poll(1)
        if n < 0:
            raise AssertionError(f"ibv_poll_cq failed: {n}")
        if n:
            return wcs[0]
    raise AssertionError(f"no completion within {timeout} s")


class Node:
    """A context, PD, CQ and QP of one type, in RTS, with a 64 KiB MR; with
    write, RDMA write in the QP's send ops and REMOTE_WRITE on the MR."""

    def __init__(self, name, srd, write=False):
        self.ctx = Context(name=name)
        self.ahs = []
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=1, max_recv_sge=1)
        if srd:
            ia = QPInitAttrEx(cap=cap, qp_type=e.IBV_QPT_DRIVER, scq=self.cq, rcq=self.cq, pd=self.pd,
                              comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                              send_ops_flags=e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_IMM |
                              e.IBV_QP_EX_WITH_RDMA_READ | (e.IBV_QP_EX_WITH_RDMA_WRITE if write else 0))
            ea = efa.EfaQPInitAttr()
            ea.driver_qp_type = efa_e.EFADV_QP_DRIVER_TYPE_SRD
            self.qp = efa.SRDQPEx(self.ctx, ia, ea)
        else:
            self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=self.cq, rcq=self.cq, cap=cap))
        attr = QPAttr(port_num=1)
        attr.qkey = QKEY
        attr.pkey_index = 0
        self.qp.to_rts(attr)
        self.mr = MR(self.pd, 64 * 1024, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ |
                     (e.IBV_ACCESS_REMOTE_WRITE if write else 0))
        self.gid = self.ctx.query_gid(1, 0)

    def ah(self, gid):
        # kept until close: an AH destroyed before the device fetched the
        # WQE is an invalid AH, as on the hardware
        gr = GlobalRoute(dgid=gid, sgid_index=0)
        ah = efa.EfaAH(self.pd, attr=AHAttr(gr=gr, is_global=1, port_num=1))
        self.ahs.append(ah)
        return ah

    def recv(self, length=4096, offset=0, wr_id=1):
        sge = SGE(self.mr.buf + offset, length, self.mr.lkey)
        self.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[sge]))

    def send(self, ah, qpn, data, wr_id=2, imm=None, qkey=QKEY):
        self.mr.write(data, len(data), 8192)
        sge = SGE(self.mr.buf + 8192, len(data), self.mr.lkey)
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND if imm is None else e.IBV_WR_SEND_WITH_IMM,
                    num_sge=1, sg=[sge])
        if imm is not None:
            wr.imm_data = imm
        wr.set_wr_ud(ah, qpn, qkey)
        self.qp.post_send(wr)

    def read(self, ah, qpn, rkey, raddr, lkey, laddr, length, wr_id=3):
        self.qp.wr_start()
        self.qp.wr_id = wr_id
        self.qp.wr_flags = e.IBV_SEND_SIGNALED
        self.qp.wr_rdma_read(rkey, raddr)
        self.qp.wr_set_sge(SGE(laddr, length, lkey))
        self.qp.wr_set_ud_addr(ah, qpn, QKEY)
        self.qp.wr_complete()

    def close(self):
        for o in [self.qp, self.mr, self.cq] + self.ahs + [self.pd, self.ctx]:
            o.close()


def pattern(n, seed):
    return bytes((i * 31 + seed) & 0xff for i in range(n))


class DataPath(unittest.TestCase):
    def test_cqs(self):
        with Context(name="rdmap3s0") as ctx:
            with CQ(ctx, 100) as cq:
                self.assertEqual(cq.cqe, 128)  # the device's depth: a power of two
            with CQEX(ctx, CqInitAttrEx(cqe=64, wc_flags=e.IBV_WC_STANDARD_FLAGS)):
                pass
            with efa.EfaCQ(ctx, CqInitAttrEx(cqe=64, wc_flags=e.IBV_WC_STANDARD_FLAGS),
                           efa.EfaDVCQInitAttr(efa_e.EFADV_WC_EX_WITH_SGID)):
                pass
            with self.assertRaises(PyverbsRDMAError) as cm:
                CQ(ctx, 32769)  # over max_cqe (32768)
            self.assertEqual(cm.exception.error_code, errno.EINVAL)
            with self.assertRaises(PyverbsRDMAError) as cm:
                CQ(ctx, 16, comp_vector=1)  # one completion vector
            self.assertEqual(cm.exception.error_code, errno.EINVAL)
        with Context(name="rdmap5s0") as ctx:  # the driver gives every device CQ_WITH_SGID
            with efa.EfaCQ(ctx, CqInitAttrEx(cqe=64, wc_flags=e.IBV_WC_STANDARD_FLAGS),
                           efa.EfaDVCQInitAttr(efa_e.EFADV_WC_EX_WITH_SGID)):
                pass

    def test_ud(self):
        s, r = Node("rdmap3s0", srd=False), Node("rdmap5s0", srd=False)
        try:
            data = pattern(1000, 1)
            r.recv(length=2048)
            s.send(s.ah(r.gid), r.qp.qp_num, data)
            wc = poll(r.cq)
            self.assertEqual(wc.status, e.IBV_WC_SUCCESS)
            self.assertEqual(wc.byte_len, 1040)  # the 40-byte GRH first
            grh = r.mr.read(40, 0)
            self.assertEqual(grh[0] >> 4, 6)
            self.assertEqual(r.mr.read(1000, 40), data)
            self.assertEqual(wc.src_qp, s.qp.qp_num)
            self.assertEqual(poll(s.cq).status, e.IBV_WC_SUCCESS)
        finally:
            s.close()
            r.close()

    def test_srd_send_and_ah(self):
        s, r = Node("rdmap3s0", srd=True), Node("rdmap5s0", srd=True)
        try:
            ah = s.ah(r.gid)
            back = r.ah(s.gid)
            ahn = back.query_efa_ah().ahn
            self.assertEqual(r.ah(s.gid).query_efa_ah().ahn, ahn)  # one number per address
            for i, imm in enumerate((None, 0x12345678)):
                data = pattern(4096, i)
                r.recv(wr_id=10 + i)
                s.send(ah, r.qp.qp_num, data, wr_id=20 + i, imm=imm)
                wc = poll(r.cq)
                self.assertEqual((wc.status, wc.opcode, wc.wr_id, wc.byte_len),
                                 (e.IBV_WC_SUCCESS, e.IBV_WC_RECV, 10 + i, 4096))
                self.assertEqual(wc.src_qp, s.qp.qp_num)
                self.assertEqual(wc.slid, ahn)
                if imm is not None:
                    self.assertTrue(wc.wc_flags & e.IBV_WC_WITH_IMM)
                    self.assertEqual(wc.imm_data, imm)
                self.assertEqual(r.mr.read(4096, 0), data)
                wc = poll(s.cq)
                self.assertEqual((wc.status, wc.wr_id), (e.IBV_WC_SUCCESS, 20 + i))
        finally:
            s.close()
            r.close()

    def test_sgid_in_extended_cq(self):
        """An EFA DV CQ WITH_SGID reports the sender's GID for an unknown AH."""
        ctx = Context(name="rdmap3s0")
        pd = PD(ctx)
        cq = efa.EfaCQ(ctx, CqInitAttrEx(cqe=64, wc_flags=e.IBV_WC_STANDARD_FLAGS),
                       efa.EfaDVCQInitAttr(efa_e.EFADV_WC_EX_WITH_SGID))
        ia = QPInitAttrEx(cap=QPCap(max_send_wr=16, max_recv_wr=16), qp_type=e.IBV_QPT_DRIVER,
                          scq=cq, rcq=cq, pd=pd, comp_mask=e.IBV_QP_INIT_ATTR_PD)
        ea = efa.EfaQPInitAttr()
        ea.driver_qp_type = efa_e.EFADV_QP_DRIVER_TYPE_SRD
        qp = efa.SRDQPEx(ctx, ia, ea)
        attr = QPAttr(port_num=1)
        attr.qkey = QKEY
        qp.to_rts(attr)
        mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        s = Node("rdmap5s0", srd=True)
        try:
            qp.post_recv(RecvWR(wr_id=5, num_sge=1, sg=[SGE(mr.buf, 4096, mr.lkey)]))
            s.send(s.ah(ctx.query_gid(1, 0)), qp.qp_num, b"x" * 100)
            end = time.monotonic() + 5
            while cq.start_poll(PollCqAttr()) == errno.ENOENT:  # ENOENT: empty
                self.assertLess(time.monotonic(), end, "no completion within 5 s")
            self.assertEqual((cq.status, cq.wr_id, cq.read_byte_len()), (e.IBV_WC_SUCCESS, 5, 100))
            self.assertEqual(cq.read_slid(), 0xffff)  # no AH for the sender here
            self.assertEqual(cq.read_sgid().gid, s.gid.gid)
            cq.end_poll()
            self.assertEqual(poll(s.cq).status, e.IBV_WC_SUCCESS)
        finally:
            s.close()
            for o in (qp, mr, cq, pd, ctx):
                o.close()

    def test_rdma_read_host_and_gpu(self):
        s, r = Node("rdmap3s0", srd=True), Node("rdmap3s0", srd=True)
        fd = lib.efasim_dmabuf_create(b"0000:04:00.0", None, 4 * MiB)
        self.assertGreaterEqual(fd, 0, os.strerror(ctypes.get_errno()))
        gpu = mmap.mmap(fd, 4 * MiB)
        try:
            ah = s.ah(r.gid)
            data = pattern(8192, 7)
            r.mr.write(data, len(data), 16384)
            s.read(ah, r.qp.qp_num, r.mr.rkey, r.mr.buf + 16384, s.mr.lkey, s.mr.buf, 8192)
            self.assertEqual(poll(s.cq).status, e.IBV_WC_SUCCESS)
            self.assertEqual(s.mr.read(8192, 0), data)
            # into the GPU's memory: a dma-buf MR of an allowed pair as target
            with DmaBufMR(s.pd, MiB, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ,
                          dmabuf=fd, offset=MiB) as dmr:  # iova = offset
                data = pattern(8192, 9)
                r.mr.write(data, len(data), 16384)
                s.read(ah, r.qp.qp_num, r.mr.rkey, r.mr.buf + 16384, dmr.lkey, MiB + 4096, 8192)
                self.assertEqual(poll(s.cq).status, e.IBV_WC_SUCCESS)
                self.assertEqual(gpu[MiB + 4096:MiB + 4096 + 8192], data)
                # out of it: the peer reads the GPU's memory
                gpu[MiB:MiB + 4096] = pattern(4096, 11)
                r.read(r.ah(s.gid), s.qp.qp_num, dmr.rkey, MiB, r.mr.lkey, r.mr.buf, 4096)
                self.assertEqual(poll(r.cq).status, e.IBV_WC_SUCCESS)
                self.assertEqual(r.mr.read(4096, 0), pattern(4096, 11))
            # a key the target does not have: remote address error (7)
            s.read(ah, r.qp.qp_num, 0x4242, r.mr.buf, s.mr.lkey, s.mr.buf, 64)
            self.assertEqual(poll(s.cq).vendor_err, 7)
        finally:
            gpu.close()
            os.close(fd)
            s.close()
            r.close()

    def test_errors(self):
        # pyverbs leaves rnr_retry alone: the device's default (3) applies
        s, r = Node("rdmap3s0", srd=True), Node("rdmap3s0", srd=True)
        try:
            ah = s.ah(r.gid)
            self.assertEqual(s.qp.query(e.IBV_QP_RNR_RETRY)[0].rnr_retry, 3)
            s.send(ah, r.qp.qp_num, b"no receive posted")
            wc = poll(s.cq)
            self.assertEqual((wc.status, wc.vendor_err), (e.IBV_WC_RNR_RETRY_EXC_ERR, 10))
            s.send(ah, 250, b"nobody has QPN 250")
            wc = poll(s.cq)
            self.assertEqual((wc.status, wc.vendor_err), (e.IBV_WC_REM_INV_RD_REQ_ERR, 9))
            nowhere = s.ah(GID("fe80:0000:0000:0000:0000:0000:dead:0001"))
            s.send(nowhere, r.qp.qp_num, b"no device has this GID")
            self.assertEqual(poll(s.cq).vendor_err, 7)
        finally:
            s.close()
            r.close()

    def write_qp_error(self, nic):
        """errno of an SRD QP with RDMA write in its send ops; 0 if made."""
        with Context(name=nic) as ctx, PD(ctx) as pd, CQ(ctx, 16) as cq:
            ia = QPInitAttrEx(cap=QPCap(), qp_type=e.IBV_QPT_DRIVER, scq=cq, rcq=cq, pd=pd,
                              comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                              send_ops_flags=e.IBV_QP_EX_WITH_RDMA_WRITE)
            ea = efa.EfaQPInitAttr()
            ea.driver_qp_type = efa_e.EFADV_QP_DRIVER_TYPE_SRD
            try:
                efa.SRDQPEx(ctx, ia, ea).close()
                return 0
            except PyverbsRDMAError as err:
                return err.error_code

    def test_rdma_write(self):
        """libefa takes RDMA write from rdma-core 46 where the device has the
        cap (rdmap5s0), and refuses the op where it has not (rdmap3s0) and,
        before 46, everywhere."""
        st = stack.detect()
        self.assertEqual(self.write_qp_error("rdmap3s0"), errno.EOPNOTSUPP)
        if not st.has("RDMA_WRITE"):
            self.assertEqual(self.write_qp_error("rdmap5s0"), errno.EOPNOTSUPP, st.rdma_core)
            return
        s, r = Node("rdmap5s0", True, write=True), Node("rdmap5s0", True, write=True)
        try:
            ah = s.ah(r.gid)
            data = pattern(4096, 9)
            s.mr.write(data, len(data), 0)
            s.qp.wr_start()
            s.qp.wr_id = 88
            s.qp.wr_flags = e.IBV_SEND_SIGNALED
            s.qp.wr_rdma_write(r.mr.rkey, r.mr.buf + 16384)
            s.qp.wr_set_sge(SGE(s.mr.buf, len(data), s.mr.lkey))
            s.qp.wr_set_ud_addr(ah, r.qp.qp_num, QKEY)
            s.qp.wr_complete()
            wc = poll(s.cq)
            self.assertEqual((wc.status, wc.wr_id, wc.opcode), (e.IBV_WC_SUCCESS, 88, e.IBV_WC_RDMA_WRITE))
            self.assertEqual(r.mr.read(len(data), 16384), data)
        finally:
            s.close()
            r.close()


if __name__ == "__main__":
    lib.efasim_active.restype = ctypes.c_int
    if not lib.efasim_active():
        sys.exit("not inside an emulated host: run under 'efap2p sim'")
    unittest.main(verbosity=2)
