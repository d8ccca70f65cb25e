# SPDX-License-Identifier: MIT
"""An emulated host as a process without CAP_SYS_ADMIN sees it, and as root
does.

Usage: test_unprivileged.py EFAP2P LIBEFAP2P P2P_CAPS

Runs as root (exit 77, skipped, otherwise); uid 65534 through setpriv. The
kernel gives a reader without CAP_SYS_ADMIN the first 64 bytes of a PCI
function's config file and no ACPI table; root reads them whole. So in
`efap2p sim` run by uid 65534: config files are 64 bytes, the ACPI tables
cannot be read, and the oracle's unprivileged paths run, those of
`efap2p explain` (the ACS state is unknown), of `efap2p check` and of
libefap2p.so preloaded into an rdma-core program (P2P_CAPS).
"""

import json
import os
import shutil
import subprocess
import sys

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
TIMEOUT = 120
CONFIG = "$SYSFS_PATH/bus/pci/devices/0000:4f:00.0/config"  # an EFA NIC of p5.48xlarge
UNKNOWN = "is unknown (config space past 64 bytes needs CAP_SYS_ADMIN)"
failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print(f"FAIL: {msg}")


def sim(who, machine, script, env=None):
    cmd = (NOBODY if who == "nobody" else []) + [EFAP2P, "sim", "--machine", machine, "--",
                                                 "sh", "-c", script]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)


def main():
    global EFAP2P
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    EFAP2P, lib, caps = (os.path.abspath(a) for a in sys.argv[1:])
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("skipped: needs root and setpriv (util-linux)")
        sys.exit(77)

    for who, size in (("root", "4096"), ("nobody", "64")):
        r = sim(who, "p5.48xlarge", f"wc -c < {CONFIG}")
        check(r.stdout.strip() == size, f"{who}: a config file of {r.stdout.strip()!r} bytes, want {size}"
              f" ({r.stderr.strip()})")
        r = sim(who, "p5.48xlarge", f"{EFAP2P} explain 0000:53:00.0 0000:4f:00.0")
        check(r.returncode == 0, f"{who}: efap2p explain: status {r.returncode}: {r.stderr}")
        said = UNKNOWN in " ".join(r.stdout.split())
        check(said == (who == "nobody"),
              f"{who}: efap2p explain {'does not say' if who == 'nobody' else 'says'} the ACS state is unknown")

    # the ACPI tables are root's alone (hygon-hmat-p2p has an HMAT)
    for who, want in (("root", True), ("nobody", False)):
        r = sim(who, "hygon-hmat-p2p", "cat $SYSFS_PATH/firmware/acpi/tables/HMAT | wc -c")
        n = int(r.stdout.strip() or "0")
        check((n > 0) == want, f"{who}: read {n} bytes of the HMAT")

    # check's unprivileged path: a report, whatever its verdict
    r = sim("nobody", "p5.48xlarge", f"{EFAP2P} check --json")
    try:
        report = json.loads(r.stdout)
        check("status" in report, "efap2p check --json as uid 65534: no status")
        print(f"efap2p check as uid 65534: status {report.get('status')!r}, exit {r.returncode}: "
              f"{report.get('summary')}")
    except json.JSONDecodeError:
        check(False, f"efap2p check --json as uid 65534 (status {r.returncode}): not JSON: "
              f"{r.stdout[:200]!r} {r.stderr}")
    check(r.returncode != 2, f"efap2p check as uid 65534: bad usage or input: {r.stderr}")

    # the library's: efadv_query_device with libefap2p.so, from 64-byte config files
    env = dict(os.environ, LD_PRELOAD=lib)
    r = subprocess.run(NOBODY + [EFAP2P, "sim", "--machine", "p5.48xlarge", "--", caps], env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    lines = [l for l in r.stdout.splitlines() if "P2P_DMA" in l]
    check(r.returncode == 0 and len(lines) == 32,
          f"p2p_caps with libefap2p.so as uid 65534: status {r.returncode}, {len(lines)} devices: {r.stderr}")
    if lines:
        print(f"libefap2p as uid 65534: {lines[0]}")

    if failures:
        sys.exit(f"test_unprivileged: {len(failures)} check(s) failed")
    print("test_unprivileged: all checks passed")


main()
