# SPDX-License-Identifier: MIT
"""Another user must not inject packets into, nor make root overwrite files
through, an emulated fabric directory.

Usage: test_fabric_security.py EFAP2P LIBEFASIM FABRIC_PEER

Runs as root (exit 77, skipped, otherwise): root's programs use the
emulator (LIBEFASIM, a tree written by `EFAP2P sim write`, a fabric
directory named in efasim.conf), and uid 65534 (setpriv) plants what an
attacker would before they start:

  symlink  in a fabric directory anyone can write, symlinks at the names
           root's QP file would be created under, pointing at a root-owned
           file: the file must stay as it was;
  planted  0666 files at those names and at the device files': uid 65534
           then sends a UD packet to root's QP, which must not receive it;
  private  a fabric directory only root can write: uid 65534 cannot plant
           anything, root's QP works, and the sender's packet does not come;
  swapped  a fabric named through a symlink uid 65534 owns in a sticky
           directory, pointing at root's private directory: once root's
           process checked it, uid 65534 points the symlink at a directory
           of its own; root's next QP must still be made in the directory
           that was checked, nothing in uid 65534's;
  sim      `efap2p sim --fabric DIR` refuses a directory anyone can write,
           in one line.

In the first two the emulator refuses the directory, saying why in one line.
"""

import glob
import os
import shutil
import stat
import subprocess
import sys
import tempfile

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
TIMEOUT = 60


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def as_nobody(cmd, env=None):
    return subprocess.run(NOBODY + cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def gids(conf):
    """The GIDs of the devices in efasim.conf, as the fabric names them."""
    out = []
    for line in open(conf):
        if line.startswith("device "):
            for kv in line.split():
                if kv.startswith("gid="):
                    out.append(kv[4:].replace(":", ""))
    return out


def plant(fab, names, kind, target):
    script = "umask 0; cd \"$1\"; shift; k=$1; t=$2; shift 2; for n; do " \
             "if [ $k = symlink ]; then ln -s \"$t\" \"$n\"; else : > \"$n\"; fi; done"
    r = as_nobody(["sh", "-c", script, "sh", fab, kind, target] + names)
    return r.returncode == 0


def victim(env, before_go=None):
    """Runs fabric_peer victim as root; before_go(pid) runs before it
    creates its QP. Returns (lines of stdout, stderr, process)."""
    p = subprocess.Popen([PEER, "victim"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline().split()
    if len(first) != 2 or first[0] != "pid":
        p.kill()
        fail(f"victim said {first}: {p.stderr.read()}")
    if before_go:
        before_go(int(first[1]))
    p.stdin.write("go\n")
    p.stdin.flush()
    return p


def read_until(p, word):
    lines = []
    for line in p.stdout:
        lines.append(line.strip())
        if line.startswith(word) or line.startswith("qp-error"):
            break
    return lines


def scenario(name, mode, work, conf_lines, planting):
    fab = os.path.join(work, name)
    os.mkdir(fab)
    os.chmod(fab, mode)
    conf = os.path.join(work, name + ".conf")
    with open(conf, "w") as f:
        f.writelines(conf_lines)
        f.write(f"fabric {fab}\n")
    os.chmod(conf, 0o644)
    env = dict(os.environ, SYSFS_PATH=TREE, EFASIM_CONFIG=conf, LD_PRELOAD=LIB)
    env.pop("EFASIM_TRACE", None)
    precious = os.path.join(work, name + ".precious")
    with open(precious, "w") as f:
        f.write("precious\n")
    planted = []

    def before(pid):
        names = []
        for g in GIDS:
            if planting == "planted":
                names.append(f"dev-{g}")
            for qpn in range(1, 5):
                names.append(f"qp-{g}-{qpn}.{pid}.tmp")
        ok = plant(fab, names, "symlink" if planting == "symlink" else "file", precious)
        planted.append(ok)

    p = victim(env, before)
    lines = read_until(p, "ready")
    result = {"lines": lines, "planted": planted[0], "fab": fab, "env": env, "proc": p,
              "precious": precious}
    return result


def finish(r):
    p = r["proc"]
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the victim hung")
    r["lines"] += out.split("\n")
    r["stderr"] = err
    return r


def refused(r):
    lines = [l for l in r["stderr"].splitlines() if "refused" in l]
    if not lines:
        fail(f"{r['fab']}: no line saying the fabric directory was refused: {r['stderr']!r}")
    if len(lines) != 1 or "writable by others" not in lines[0]:
        fail(f"want one line saying why: {lines}")
    print(f"  said: {lines[0]}")


def sender(r, gid, qpn):
    return subprocess.run(NOBODY + [PEER, "send", gid, str(qpn)], env=r["env"], capture_output=True,
                          text=True, timeout=TIMEOUT)


def main():
    global TREE, LIB, PEER, GIDS
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    efap2p, LIB, PEER = (os.path.abspath(a) for a in sys.argv[1:])
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("skipped: needs root and setpriv (util-linux)")
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="efasim-fabsec-")
    try:
        os.chmod(work, 0o755)
        TREE = os.path.join(work, "tree")
        subprocess.run([efap2p, "sim", "write", "--machine", "p4d.24xlarge", TREE], check=True,
                       capture_output=True, timeout=TIMEOUT)
        subprocess.run(["chmod", "-R", "a+rX", TREE], check=True)
        # the attacker must reach the programs and the library
        for f in (LIB, PEER):
            d = f
            while d != "/":
                if not os.stat(d).st_mode & stat.S_IXOTH and os.path.isdir(d):
                    print(f"skipped: uid 65534 cannot reach {f}")
                    sys.exit(77)
                d = os.path.dirname(d)
        base_conf = os.path.join(TREE, "efasim.conf")
        GIDS = gids(base_conf)
        conf_lines = [l for l in open(base_conf) if not l.startswith("fabric ")]

        print("symlink: a fabric directory anyone can write, symlinks planted")
        r = finish(scenario("symlink", 0o777, work, conf_lines, "symlink"))
        if not r["planted"]:
            fail("uid 65534 could not plant the symlinks")
        size = os.stat(r["precious"]).st_size
        if open(r["precious"], "rb").read() != b"precious\n":
            fail(f"root's file outside the fabric was overwritten through a planted symlink "
                 f"(now {size} bytes)")
        if not any(l.startswith("qp-error") for l in r["lines"]):
            fail(f"root created a QP in a fabric anyone can write: {r['lines']}")
        refused(r)

        print("planted: 0666 files at the names of root's device and QP files")
        r = scenario("planted", 0o777, work, conf_lines, "planted")
        if not r["planted"]:
            fail("uid 65534 could not plant the files")
        lines = r["lines"]
        gid = next((l.split()[1] for l in lines if l.startswith("gid ")), None)
        qpn = next((l.split()[1] for l in lines if l.startswith("qpn ")), None)
        if gid and qpn:
            s = sender(r, gid, int(qpn))
            print(f"  uid 65534's sender: {s.stdout.strip()} {s.stderr.strip()}")
        r = finish(r)
        if any(l.startswith("received") for l in r["lines"]):
            fail(f"uid 65534 delivered a packet to root's QP: {r['lines']}")
        if not any(l.startswith("qp-error") for l in r["lines"]):
            fail(f"root created a QP in a fabric anyone can write: {r['lines']}")
        refused(r)

        print("private: a fabric directory only root can write")
        r = scenario("private", 0o700, work, conf_lines, "planted")
        if r["planted"]:
            fail("uid 65534 planted files in root's private fabric directory")
        lines = r["lines"]
        gid = next((l.split()[1] for l in lines if l.startswith("gid ")), None)
        qpn = next((l.split()[1] for l in lines if l.startswith("qpn ")), None)
        if not gid or not qpn:
            fail(f"root's QP in its private fabric: {lines}")
        s = sender(r, gid, int(qpn))
        print(f"  uid 65534's sender: {s.stdout.strip()} {s.stderr.strip()}")
        r = finish(r)
        if not any(l == "nothing" for l in r["lines"]):
            fail(f"root's QP received something: {r['lines']}")

        print("swapped: the fabric's path redirected by uid 65534 after the check")
        shared = os.path.join(work, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        private = os.path.join(work, "swapped")
        os.mkdir(private, 0o700)
        link = os.path.join(shared, "link")
        evil = os.path.join(shared, "evil")
        r = as_nobody(["sh", "-c", 'ln -s "$1" "$2/link" && mkdir -m 0777 "$2/evil"', "sh", private,
                       shared])
        if r.returncode != 0:
            fail(f"uid 65534 could not make its symlink and folder: {r.stderr}")
        conf = os.path.join(work, "swapped.conf")
        with open(conf, "w") as f:
            f.writelines(conf_lines)
            f.write(f"fabric {link}\n")
        os.chmod(conf, 0o644)
        env = dict(os.environ, SYSFS_PATH=TREE, EFASIM_CONFIG=conf, LD_PRELOAD=LIB)
        env.pop("EFASIM_TRACE", None)
        p = subprocess.Popen([PEER, "twice"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        first = p.stdout.readline().strip()
        if not first.startswith("qpn "):
            p.kill()
            fail(f"root's first QP in a private fabric: {first} {p.stderr.read()}")
        r = as_nobody(["sh", "-c", 'ln -s "$1" "$2/link.new" && mv -T "$2/link.new" "$2/link"', "sh",
                       evil, shared])
        if r.returncode != 0 or os.readlink(link) != evil:
            p.kill()
            fail(f"uid 65534 could not swap its symlink: {r.stderr}")
        try:
            out, err = p.communicate("go\n", timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("root's second QP hung")
        print(f"  root's QPs: {first}, {' '.join(out.split())}")
        if os.listdir(evil):
            fail(f"root made files in uid 65534's directory, where the swapped path leads: "
                 f"{os.listdir(evil)}")
        if not out.startswith("qpn ") or not any(n.startswith("qp-") for n in os.listdir(private)):
            fail(f"root's second QP is not in the fabric that was checked: {out} {err} "
                 f"{os.listdir(private)}")

        print("sim: efap2p sim --fabric refuses a directory anyone can write")
        open_dir = os.path.join(work, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        # trees of its own: another run's dead host found and cleaned up
        # would be a second line of stderr
        trees = os.path.join(work, "trees")
        os.mkdir(trees)
        s = subprocess.run([efap2p, "sim", "--fabric", open_dir, "--", "true"], capture_output=True,
                           text=True, timeout=TIMEOUT, env=dict(os.environ, TMPDIR=trees))
        if s.returncode == 0 or "refused" not in s.stderr or len(s.stderr.strip().splitlines()) != 1:
            fail(f"efap2p sim --fabric {open_dir}: status {s.returncode}, stderr {s.stderr!r}")
        print(f"  said: {s.stderr.strip()}")
        if glob.glob(os.path.join(open_dir, "*")):
            fail(f"efap2p sim wrote into the refused directory: {os.listdir(open_dir)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("test_fabric_security: all checks passed")


main()
