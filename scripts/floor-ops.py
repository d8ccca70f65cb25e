#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns a trace of the computed first answer into the system calls
bench_floor replays (see ctests/shim/bench_floor.c).

    floor-ops.py TRACE ROOT > OPS

TRACE is `strace -f -qq -y -e trace=openat,read,pread64,readlinkat,
getdents64,close,fstat,newfstatat,statx` of `bench_shim cold`, which opens
/nonexistent-efap2p-marker-cold-begin and -end around the answers; ROOT is
the sysfs tree it read ($SYSFS_PATH). Kept: the calls on files of the tree
between the markers, paths relative to ROOT; a file opened again after it
was read and closed is replayed once (the minimal reads); fstat and the
like are left out. Prints a summary on stderr, and the traced calls on the
tree by name ("traced close=247 newfstatat=0 ...").
"""
import re
import sys

FLAGS = {"O_RDONLY": 0o0, "O_WRONLY": 0o1, "O_RDWR": 0o2, "O_NOCTTY": 0o400,
         "O_NONBLOCK": 0o4000, "O_DIRECTORY": 0o200000, "O_CLOEXEC": 0o2000000,
         "O_LARGEFILE": 0o100000, "O_NOFOLLOW": 0o400000}

LINE = re.compile(r"^(\d+)\s+(.*)$")
CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+)(<[^>]*>)?")
FD = re.compile(r"^(\d+)<([^>]*)>")


def flags_of(s):
    n = 0
    for f in s.split("|"):
        if f not in FLAGS:
            raise SystemExit(f"floor-ops: unknown open flag {f}")
        n |= FLAGS[f]
    return n


def calls(lines):
    """Whole calls, <unfinished ...> and <... resumed> joined, per thread."""
    pending = {}
    for raw in lines:
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        r = re.match(r"^<\.\.\. \w+ resumed>\s*(.*)$", rest)
        if r:
            rest = pending.pop(pid, "") + r.group(1)
        yield rest


def args_of(s):
    """Top-level comma-separated arguments (strings may hold commas)."""
    out, cur, depth, q = [], "", 0, False
    i = 0
    while i < len(s):
        c = s[i]
        if q:
            cur += c
            if c == "\\":
                cur += s[i + 1]
                i += 1
            elif c == '"':
                q = False
        elif c == '"':
            q = True
            cur += c
        elif c in "[{(":
            depth += 1
            cur += c
        elif c in "]})":
            depth -= 1
            cur += c
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def main():
    trace, root = sys.argv[1], sys.argv[2].rstrip("/") + "/"
    with open(trace) as f:
        lines = f.readlines()
    inside = False
    counts = {}
    slots, free = {}, []
    nslots = 0
    groups = []  # per open: [path, [ops]]
    open_group = {}
    ops = []
    for call in calls(lines):
        if "marker-cold-begin" in call:
            inside = True
            continue
        if "marker-cold-end" in call:
            break
        if not inside:
            continue
        m = CALL.match(call)
        if not m:
            continue
        name, args, ret, retpath = m.group(1), args_of(m.group(2)), int(m.group(3)), m.group(4)
        if root[:-1] in m.group(2):
            counts[name] = counts.get(name, 0) + 1
        if name == "openat":
            path = args[1].strip('"')
            if not path.startswith(root):
                continue
            slot = free.pop() if free else nslots
            if slot == nslots:
                nslots += 1
            if ret >= 0:
                slots[ret] = slot
            else:
                free.append(slot)
            g = [path[len(root):], [f"open {slot} {flags_of(args[2])} {path[len(root):]}"], slot]
            groups.append(g)
            if ret >= 0:
                open_group[ret] = g
            continue
        if name == "readlinkat":
            path = args[1].strip('"')
            if path.startswith(root):
                groups.append([None, [f"readlink {args[3]} {path[len(root):]}"], None])
            continue
        fm = FD.match(args[0]) if args else None
        if not fm or int(fm.group(1)) not in slots:
            continue
        fd = int(fm.group(1))
        slot = slots[fd]
        g = open_group[fd]
        if name == "read":
            g[1].append(f"read {slot} {args[2]}")
        elif name == "pread64":
            g[1].append(f"pread {slot} {args[2]} {args[3]}")
        elif name == "getdents64":
            g[1].append(f"getdents {slot} {args[2]}")
        elif name == "close":
            g[1].append(f"close {slot}")
            del slots[fd]
            del open_group[fd]
            free.append(slot)
    seen = set()
    kept = dropped = 0
    for path, gops, _ in groups:
        if path is not None and path in seen:
            dropped += len(gops)
            continue
        if path is not None:
            seen.add(path)
        ops.extend(gops)
        kept += len(gops)
    if not inside:
        raise SystemExit("floor-ops: no cold-begin marker in the trace")
    for o in ops:
        print(o)
    print(f"floor-ops: {kept} calls kept, {dropped} of files read twice dropped, "
          f"{len(seen)} files", file=sys.stderr)
    print("traced " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
