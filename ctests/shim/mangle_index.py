#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rewrites a topology file's index (FILE.idx) in place into one the
front's reader trusts up to its last records: the NIC records moved after
the dma-buf ones (read on demand with them, no longer in the head), and
the first two peer records swapped, so that the peers fail their check
once the NICs and dma-bufs have passed theirs. Layout:
answer/index.go.

  mangle_index.py FILE.idx
"""
import struct
import sys

HEADER, ENTRY, PEER = 192, 16, 80
FUNCTIONS, NICS, DMABUFS, PEERS, STRINGS = 2, 3, 4, 5, 1

path = sys.argv[1]
data = bytearray(open(path, "rb").read())
n = struct.unpack_from("<I", data, 28)[0]
secs = {}
for i in range(n):
    kind, count, off, size = struct.unpack_from("<IIII", data, HEADER + ENTRY * i)
    secs[kind] = (count, bytes(data[off:off + size]))
count, peers = secs[PEERS]
if count < 2:
    sys.exit(f"{path}: {count} peer records, want two or more")
secs[PEERS] = (count, peers[PEER:2 * PEER] + peers[:PEER] + peers[2 * PEER:])
out = bytearray(data[:HEADER + ENTRY * n])
for i, kind in enumerate((FUNCTIONS, DMABUFS, NICS, PEERS, STRINGS)):
    out += b"\0" * (-len(out) % 8)
    count, body = secs[kind]
    struct.pack_into("<IIII", out, HEADER + ENTRY * i, kind, count, len(out), len(body))
    out += body
struct.pack_into("<Q", out, 16, len(out))
with open(path, "r+b") as f:
    f.write(out)
    f.truncate()
