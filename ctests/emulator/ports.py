# SPDX-License-Identifier: MIT
"""TCP ports for the programs that meet over the loopback (fi_pingpong,
perftest, qperf, fabtest): a free one, and whether a server listens on it
yet (from /proc/net/tcp, so that nothing connects to it before its
server does)."""

import socket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """True when some socket listens on the TCP port."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False
