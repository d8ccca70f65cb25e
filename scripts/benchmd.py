#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Turn `go test -bench -count N` output into a Markdown table of medians."""
import re
import statistics
import sys

rows = {}
order = []
for line in sys.stdin:
    m = re.match(r'^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$', line)
    if not m:
        continue
    name = m.group(1)
    fields = m.group(4).split()
    vals = {}
    for i in range(0, len(fields) - 1, 2):
        try:
            vals[fields[i + 1]] = float(fields[i])
        except ValueError:
            pass
    if name not in rows:
        rows[name] = []
        order.append(name)
    rows[name].append(vals)

units = []
for name in order:
    for r in rows[name]:
        for u in r:
            if u not in units:
                units.append(u)

def fmt(v, unit):
    if unit == 'ns/op':
        if v >= 1e6:
            return '%.2f ms' % (v / 1e6)
        if v >= 1e3:
            return '%.1f us' % (v / 1e3)
        return '%.1f ns' % v
    if unit == 'B/op' and v >= 1 << 20:
        return '%.1f MiB' % (v / (1 << 20))
    return '%g' % v

print('| benchmark | runs | ' + ' | '.join('median ' + u for u in units) + ' |')
print('|---|---|' + '---|' * len(units))
for name in order:
    cells = []
    for u in units:
        vs = [r[u] for r in rows[name] if u in r]
        cells.append(fmt(statistics.median(vs), u) if vs else '')
    print('| %s | %d | %s |' % (name, len(rows[name]), ' | '.join(cells)))
