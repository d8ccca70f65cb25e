#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The precomputed topology file, read from its default place by an
unmodified program with libefap2p preloaded and no EFAP2P_* variable set,
inside emulated hosts (efap2p sim points the default places into each
emulated host's tree):

  boot       the boot-time file (efap2p export --boot, as the unit runs
             it): every answer from its index, no Go core, one thread
  operator   the operator's /etc file with a NIC recorded as blocking
             peers, exported on another host of the same model: used
             (its functions checked one by one), that NIC loses P2P_DMA,
             still no Go core
  checked    the same file exported on this host: in this boot, on this
             tree, its functions are not read again -- a device ID changed
             since (as a hot-plug would) goes unseen -- and its NICs are
             found by name
  other      the same file, exported on p5.48xlarge, read on another machine
             model: ignored with one line saying why; the answers are that
             machine's
  writable   the same file, group-writable: ignored with one line
  stale      the file edited after export: its index is stale, the Go core
             reads the file itself (the blocked NIC still loses the bit)
  same-size  an edit that keeps the file's size (a second NIC blocked:
             false -> "true "), its modification time set back: the index is
             stale all the same, and the answers are the edited file's
  hostile    EFAP2P_TOPOLOGY naming a FIFO with no writer, a folder,
             /dev/zero, a 1 GiB file: one line each, at once, and the
             computed answers
  records    the boot-time index with its NIC records among those read on
             demand, and its peer records out of order (mangle_index.py):
             a pairwise query reads them and refuses them all, later NIC
             lookups find nothing there (run with the ASan build: no read
             of what the refused read freed) and the core answers

  check_precomp.py EFAP2P LIBRARY TEST_HOST SCENARIO
"""
import os
import subprocess
import sys
import tempfile

efap2p, lib, test_host, scenario = sys.argv[1:5]
HERE = os.path.dirname(os.path.abspath(__file__))
BLOCKED = "0000:4f:00.0"  # rdmap79s0 of p5.48xlarge
failures = []


def sim(machine, script, preload=False, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EFAP2P_")}
    env.pop("LD_PRELOAD", None)
    env.update(extra or {})
    if preload:
        env["LD_PRELOAD"] = lib
    r = subprocess.run([efap2p, "sim", "--machine", machine, "--", "sh", "-ec", script],
                       env=env, capture_output=True, text=True, timeout=60)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode:
        failures.append(f"{machine}: exit {r.returncode}")
    return r


def answers(out):
    bits, core, threads = {}, None, None
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0].startswith("rdmap"):
            bits[f[0]] = f[1] == "1"
        elif len(f) == 4 and f[0] == "core":
            core, threads = f[1] == "1", int(f[3])
    return bits, core, threads


def want(cond, what):
    if not cond:
        failures.append(what)


with tempfile.TemporaryDirectory() as keep:
    if scenario == "hostile":
        fifo, huge = os.path.join(keep, "fifo"), os.path.join(keep, "huge.json")
        os.mkfifo(fifo)
        with open(huge, "wb") as f:
            f.truncate(1 << 30)  # sparse
        for path in (fifo, keep, "/dev/zero", huge):
            r = sim("p5.48xlarge", f'"{test_host}" list', preload=True, extra={"EFAP2P_TOPOLOGY": path})
            bits, core, threads = answers(r.stdout)
            errors = [l for l in r.stderr.splitlines() if l.startswith("efap2p: error:")]
            want(len(errors) == 1 and path in errors[0], f"{path}: errors {errors}, want one naming it")
            want(len(bits) == 32 and all(bits.values()), f"{path}: P2P_DMA {bits}, want all 32 (computed)")
    elif scenario == "checked":
        gpu = "$SYSFS_PATH/bus/pci/devices/0000:53:00.0/device"
        r = sim("p5.48xlarge", f'"{efap2p}" export --peer-blocked {BLOCKED} '
                f'-o "$EFAP2P_TOPOLOGY_ROOT/etc/efap2p/topology.json"; '
                f'chmod u+w "{gpu}"; echo 0x9999 > "{gpu}"; "{test_host}" list', preload=True)
        bits, core, threads = answers(r.stdout)
        errors = [l for l in r.stderr.splitlines() if l.startswith("efap2p: error:")]
        want(len(bits) == 32 and not bits["rdmap79s0"] and
             all(v for k, v in bits.items() if k != "rdmap79s0"),
             f"checked: P2P_DMA {bits}; want all but rdmap79s0 (from the file)")
        want(not errors, f"checked: errors logged: {errors} (the functions were read again)")
        want(core is False and threads == 1, f"checked: core mapped {core}, {threads} threads")
    elif scenario == "records":
        mangle = os.path.join(HERE, "mangle_index.py")
        extra = {"EFAP2P_CORE": os.environ["SHIM_CORE"]} if "SHIM_CORE" in os.environ else {}
        r = sim("p5.48xlarge", f'"{efap2p}" export --boot 2>/dev/null; '
                f'"{sys.executable}" "{mangle}" "$EFAP2P_TOPOLOGY_ROOT/run/efap2p/topology.json.idx"; '
                f'"{test_host}" peer-first p2p', preload=True, extra=extra)
        want("AddressSanitizer" not in r.stderr, "records: AddressSanitizer reported an error")
        want("cannot be read" in r.stderr or "efap2p: error" not in r.stderr,
             "records: an error was logged")
    elif scenario == "boot":
        r = sim("p5.48xlarge", f'"{efap2p}" export --boot; "{test_host}" list', preload=True)
        bits, core, threads = answers(r.stdout)
        want(len(bits) == 32 and all(bits.values()), f"boot file: P2P_DMA {bits}, want all 32")
        want(core is False and threads == 1, f"boot file: core mapped {core}, {threads} threads")
        want("efap2p: error" not in r.stderr, "boot file: an error was logged")
    else:
        # the operator's file with a NIC blocked, written in place (export
        # on p5.48xlarge: for "operator" and "other", from an emulated
        # p5.48xlarge inside the host, another tree: its index is not
        # taken as checked there, and its functions are read one by one)
        export = (f'"{efap2p}" export --peer-blocked {BLOCKED} -o "$d/topology.json" 2>/dev/null')
        if scenario in ("operator", "other"):
            export = f'"{efap2p}" sim --machine p5.48xlarge -- {export}'
        # same-size: rdmap80s0 blocked by an edit that keeps the size, the
        # modification time set back
        edit = ("import os, sys; p = sys.argv[1]; st = os.stat(p); t = open(p).read(); "
                "k = t.index('\"0000:50:00.0\"'); i = t.index('false', k); "
                "open(p, 'r+').write(t[:i] + 'true ' + t[i + 5:]); "
                "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))")
        prep = {"operator": ":", "other": ":", "writable": "chmod g+w \"$d/topology.json\"",
                "stale": "echo >> \"$d/topology.json\"",
                "same-size": f'"{sys.executable}" -c "{edit}" "$d/topology.json"'}[scenario]
        machine = "intel-acs-switch" if scenario == "other" else "p5.48xlarge"
        script = (f'd="$EFAP2P_TOPOLOGY_ROOT/etc/efap2p"; {export}; {prep}; "{test_host}" list')
        r = sim(machine, script, preload=True)
        bits, core, threads = answers(r.stdout)
        errors = [l for l in r.stderr.splitlines() if l.startswith("efap2p: error:")]
        if scenario in ("operator", "stale", "same-size"):
            blocked = {"rdmap79s0", "rdmap80s0"} if scenario == "same-size" else {"rdmap79s0"}
            want(len(bits) == 32 and all(bits[k] == (k not in blocked) for k in bits),
                 f"{scenario}: P2P_DMA {bits}; want all but {sorted(blocked)}")
            want(not errors, f"{scenario}: errors logged: {errors}")
            want(core is (scenario != "operator"),
                 f"{scenario}: Go core mapped {core}, want {scenario != 'operator'}")
            if scenario == "operator":
                want(threads == 1, f"operator: {threads} threads, want 1")
        else:
            why = {"other": "describes another machine: 0000:",
                   "writable": "is not trusted: writable by its group (mode 0664)"}[scenario]
            want(len(errors) == 1 and why in errors[0] and "/etc/efap2p/topology.json" in errors[0],
                 f"{scenario}: errors {errors}, want one saying {why!r}")
            if scenario == "other":  # intel-acs-switch: no NIC gets true P2P
                want(bits and not any(bits.values()), f"other: P2P_DMA {bits}, want none")
            else:  # computed: the blocked NIC is invisible without the file
                want(len(bits) == 32 and all(bits.values()), f"writable: P2P_DMA {bits}, want all")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
