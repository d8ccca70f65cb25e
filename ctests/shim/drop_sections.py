#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Copies an ELF executable with its section header table unreferenced
(as sstrip leaves a program: it still runs, since the kernel and the loader
read only its program headers), so that what tells a Go binary must come
from its program headers and segments.

  drop_sections.py IN OUT
"""
import os
import struct
import sys

src, dst = sys.argv[1:3]
data = bytearray(open(src, "rb").read())
if data[:4] != b"\x7fELF" or data[4] != 2:
    sys.exit(f"{src}: not a 64-bit ELF file")
struct.pack_into("<Q", data, 0x28, 0)          # e_shoff
struct.pack_into("<HHH", data, 0x3a, 0, 0, 0)  # e_shentsize, e_shnum, e_shstrndx
with open(dst, "wb") as f:
    f.write(data)
os.chmod(dst, 0o755)
