# SPDX-License-Identifier: MIT
"""Which rdma-core and libfabric this machine has, and what follows from
their releases: the one place every test that depends on them asks.

The same build runs on Debian 12 (rdma-core 44, libfabric 1.17) and on
Debian 13 (rdma-core 56.1, libfabric 2.1.0); a test's expectation that
changed between releases is decided here, by release, never by naming one
distribution.

The releases are read from the libraries the dynamic loader finds, as the
programs under test load them: rdma-core's from the file name of libefa.so.1
(rdma-core's build names it libefa.so.1.ABI.RELEASE, e.g.
libefa.so.1.3.56.1), libfabric's from fi_version() (libfabric's API version
is its release's major.minor). No libfabric: every libfabric behaviour is
off.

Usage:
  stack.py                 print the releases and every behaviour, one a line
  stack.py env             the same as EFASTACK_* shell assignments
  stack.py -- CMD ARGS...  run CMD with the EFASTACK_* variables set (the C
                           tests read them through ctests/stack.h)
  stack.py has NAME        exit 0 when the behaviour NAME holds, 1 when not
From Python: `import stack; s = stack.detect(); s.has("RDMA_WRITE")`.
"""

import ctypes
import os
import sys

# name -> (library, first release with it, what changed). A test asks by
# name; `stack.py` prints the table with the values on this machine.
BEHAVIOURS = {
    "RDMA_WRITE": ("rdma-core", (46,),
                   "libefa reports RDMA_WRITE in efadv device_caps and posts RDMA writes "
                   "(IBV_QP_EX_WITH_RDMA_WRITE); before, it refuses the op flag (EOPNOTSUPP)"),
    "QUERY_MR": ("rdma-core", (50,), "libefa has efadv_query_mr"),
    "UNSOLICITED_WRITE_RECV": ("rdma-core", (52,),
                               "libefa reports UNSOLICITED_WRITE_RECV in efadv device_caps"),
    "BAD_ADDRESS_REM_ACCESS": ("rdma-core", (52,),
                               "libefa maps the device's completion status 7 (remote bad address) "
                               "to IBV_WC_REM_ACCESS_ERR; before, to IBV_WC_GENERAL_ERR"),
    "EFA3": ("rdma-core", (53,), "libefa claims PCI ID 1d0f:efa3 (trn2's NICs)"),
    "HOST_ID": ("libfabric", (1, 18),
                "the EFA provider reads its host id from /sys/devices/virtual/dmi/id/board_asset_tag"),
    "EFA_DIRECT": ("libfabric", (2, 1),
                   "the EFA provider has the efa-direct fabric, which fi_getinfo lists first: "
                   "fi_pingpong -p efa picks it (max message 8800) unless given -f efa"),
    "DGRAM_CONTEXT2": ("libfabric", (2, 1),
                       "the EFA provider's dgram endpoints need FI_CONTEXT2 in the hints' mode"),
}

# efadv_device_attr.device_caps bits (infiniband/efadv.h)
EFADV_CAPS = {"RDMA_READ": 1 << 0, "RNR_RETRY": 1 << 1, "CQ_WITH_SGID": 1 << 2,
              "RDMA_WRITE": 1 << 3, "UNSOLICITED_WRITE_RECV": 1 << 4}

# enum ibv_wc_status (infiniband/verbs.h)
IBV_WC_REM_ACCESS_ERR = 10
IBV_WC_GENERAL_ERR = 21


class Stack:
    """The releases found and the behaviours that follow from them."""

    def __init__(self, rdma_core, libfabric):
        self.rdma_core = rdma_core  # tuple of ints, e.g. (56, 1)
        self.libfabric = libfabric  # (major, minor) or None

    def has(self, name):
        lib, since, _ = BEHAVIOURS[name]
        have = self.rdma_core if lib == "rdma-core" else self.libfabric
        return have is not None and tuple(have) >= since

    def efadv_caps_mask(self):
        """The efadv device_caps bits libefa passes on from the kernel's."""
        m = EFADV_CAPS["RDMA_READ"] | EFADV_CAPS["RNR_RETRY"] | EFADV_CAPS["CQ_WITH_SGID"]
        if self.has("RDMA_WRITE"):
            m |= EFADV_CAPS["RDMA_WRITE"]
        if self.has("UNSOLICITED_WRITE_RECV"):
            m |= EFADV_CAPS["UNSOLICITED_WRITE_RECV"]
        return m

    def efadv_caps(self, *names):
        """device_caps as libefa reports them for a device whose kernel
        reports the named caps (efadv names)."""
        return sum(EFADV_CAPS[n] for n in set(names)) & self.efadv_caps_mask()

    def bad_address_status(self):
        return IBV_WC_REM_ACCESS_ERR if self.has("BAD_ADDRESS_REM_ACCESS") else IBV_WC_GENERAL_ERR

    def efa_default_fabric(self):
        """The EFA fabric fi_getinfo lists first for rdm (fi_pingpong's choice)."""
        return "efa-direct" if self.has("EFA_DIRECT") else "efa"

    def env(self):
        """The EFASTACK_* variables the C tests read (ctests/stack.h)."""
        v = {"EFASTACK_RDMA_CORE": ".".join(map(str, self.rdma_core)),
             "EFASTACK_LIBFABRIC": ".".join(map(str, self.libfabric)) if self.libfabric else "none",
             "EFASTACK_EFADV_CAPS_MASK": f"{self.efadv_caps_mask():#x}",
             "EFASTACK_BAD_ADDRESS_STATUS": str(self.bad_address_status())}
        for name in BEHAVIOURS:
            v["EFASTACK_" + name] = "1" if self.has(name) else "0"
        return v

    def describe(self):
        out = [f"rdma-core {'.'.join(map(str, self.rdma_core))}",
               f"libfabric {'.'.join(map(str, self.libfabric)) if self.libfabric else 'none'}"]
        for name, (lib, since, what) in BEHAVIOURS.items():
            out.append(f"{name:24} {'yes' if self.has(name) else 'no ':3}  ({lib} {'.'.join(map(str, since))}+: {what})")
        return "\n".join(out)


class StackError(Exception):
    """The installed stack cannot be told."""


def _loaded_path(stem):
    """The file this process mapped for a library whose name starts with stem."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split(None, 5)[-1].strip()
            if os.path.basename(path).startswith(stem):
                return path
    return None


def rdma_core_release():
    try:
        ctypes.CDLL("libefa.so.1")
    except OSError as e:
        raise StackError(f"libefa.so.1 cannot be loaded ({e}): install rdma-core's ibverbs-providers") from e
    path = _loaded_path("libefa.so.1")
    name = os.path.basename(os.path.realpath(path)) if path else ""
    parts = name[len("libefa.so."):].split(".") if name.startswith("libefa.so.") else []
    if len(parts) < 3 or not all(p.isdigit() for p in parts):
        raise StackError(f"the rdma-core release of {path or 'libefa.so.1'} cannot be told: rdma-core "
                         "names it libefa.so.1.ABI.RELEASE (e.g. libefa.so.1.3.56.1)")
    return tuple(int(p) for p in parts[2:])


def libfabric_release():
    try:
        lib = ctypes.CDLL("libfabric.so.1")
    except OSError:
        return None
    lib.fi_version.restype = ctypes.c_uint32
    v = lib.fi_version()
    return (v >> 16, v & 0xffff)


_detected = None


def detect():
    """The Stack of this machine (computed once a process)."""
    global _detected
    if _detected is None:
        _detected = Stack(rdma_core_release(), libfabric_release())
    return _detected


def main(argv):
    try:
        s = detect()
    except StackError as e:
        sys.exit(f"stack.py: {e}")
    if not argv:
        print(s.describe())
    elif argv[0] == "env":
        for k, v in s.env().items():
            print(f"{k}={v}")
    elif argv[0] == "has" and len(argv) == 2 and argv[1] in BEHAVIOURS:
        sys.exit(0 if s.has(argv[1]) else 1)
    elif argv[0] == "--" and len(argv) > 1:
        env = dict(os.environ)
        env.update(s.env())
        try:
            os.execvpe(argv[1], argv[1:], env)
        except OSError as e:
            sys.exit(f"stack.py: {argv[1]}: {e.strerror}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
