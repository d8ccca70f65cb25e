# SPDX-License-Identifier: MIT
"""Python multiprocessing with the "fork" start method, libefap2p preloaded,
inside `efap2p sim` (p5.48xlarge): the parent's query starts the Go core;
forked workers never enter Go. They answer from what the parent cached
(rdmap79s0: P2P_DMA set) or pass through to libefa (rdmap80s0, never asked
in the parent: no P2P_DMA, and no hang). A "spawn" worker is a new process
with its own core: it gets every answer.

Usage: efap2p sim -- /usr/bin/python3 test_pyfork.py
"""

import multiprocessing as mp
import sys

from pyverbs.providers.efa.efadv import EfaContext

P2P_DMA = 1 << 31


def p2p(name):
    with EfaContext(name=name) as ctx:
        return bool(ctx.query_efa_device().device_caps & P2P_DMA)


def main():
    failures = []
    if not p2p("rdmap79s0"):
        failures.append("parent: rdmap79s0 has no P2P_DMA")
    want = {"fork": [True, False], "spawn": [True, True]}
    for method, expect in want.items():
        with mp.get_context(method).Pool(2) as pool:
            try:
                got = pool.map_async(p2p, ["rdmap79s0", "rdmap80s0"]).get(timeout=60)
            except mp.TimeoutError:
                failures.append(f"{method}: workers hung")
                pool.terminate()
                continue
        print(f"{method} workers: rdmap79s0 {got[0]}, rdmap80s0 {got[1]}")
        if got != expect:
            failures.append(f"{method}: P2P_DMA {got}, want {expect}")
    if not p2p("rdmap80s0"):
        failures.append("parent: rdmap80s0 has no P2P_DMA")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
