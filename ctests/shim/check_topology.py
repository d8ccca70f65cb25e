# SPDX-License-Identifier: MIT
"""ibv_reg_dmabuf_mr with a topology file that records the peer-blocked
NIC of ctests/emulator/refused.json: its pairs fail fast from the first
call (test_dmabuf topology). Then a malformed topology file: reported once,
and the other sources answer (test_dmabuf enforce).

Usage: check_topology.py EFAP2P LIBEFAP2P MODEL TEST_DMABUF
"""

import os
import subprocess
import sys
import tempfile

efap2p, lib, model, prog = sys.argv[1:5]
failures = []
with tempfile.TemporaryDirectory() as tmp:
    tree, topo, bad = (os.path.join(tmp, n) for n in ("tree", "topo.json", "bad.json"))
    subprocess.run([efap2p, "sim", "write", "--model", model, tree], check=True,
                   capture_output=True)
    # for the release the emulated host runs (efap2p sim sets EFAP2P_KERNEL
    # to the model's)
    kernel = subprocess.run([efap2p, "sim", "--model", model, "--", "sh", "-c", "echo $EFAP2P_KERNEL"],
                            check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([efap2p, "export", "--sysfs", tree, "--kernel", kernel, "--peer-blocked", "0000:05:00.0",
                    "-o", topo], check=True, capture_output=True)
    with open(bad, "w") as f:
        f.write('{"format": "efap2p-topology",\n "version": 99}\n')
    for path, mode in ((topo, "topology"), (bad, "enforce")):
        env = {k: v for k, v in os.environ.items() if not k.startswith("EFAP2P_")}
        env.update(LD_PRELOAD=lib, EFAP2P_TOPOLOGY=path)
        r = subprocess.run([efap2p, "sim", "--model", model, "--", prog, mode], env=env,
                           capture_output=True, text=True)
        print(r.stdout, end="")
        print(r.stderr, end="", file=sys.stderr)
        if r.returncode:
            failures.append(f"test_dmabuf {mode} with {os.path.basename(path)}: exit {r.returncode}")
        complaints = r.stdout.count("efap2p: error: " + path) + \
            r.stderr.count("efap2p: error: " + path)
        if complaints != (1 if path == bad else 0):
            failures.append(f"{os.path.basename(path)}: {complaints} complaint(s) about the file")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
