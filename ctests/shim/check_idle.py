# SPDX-License-Identifier: MIT
"""A Python process with libefap2p preloaded that never calls it has as many
threads as without it, and no Go core mapped (inside `efap2p sim`).

Usage: check_idle.py EFAP2P LIBEFAP2P PYTHON
"""

import os
import subprocess
import sys

efap2p, lib, python = sys.argv[1:4]
probe = ("import os; import pyverbs.device as d; d.get_device_list(); "
         "print(len(os.listdir('/proc/self/task')), "
         "any('libefap2p-core' in l for l in open('/proc/self/maps')))")


def run(preload):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = lib
    out = subprocess.run([efap2p, "sim", "--", python, "-c", probe], env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout.split()


plain, shim = run(False), run(True)
print(f"threads, core mapped: plain {plain}, preloaded {shim}")
sys.exit(0 if plain == shim == [plain[0], "False"] else 1)
