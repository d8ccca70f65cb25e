#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/check-layers.py on small C files: it passes a layered set and
fails, naming file and symbol, on a call upward, a cycle inside a layer, a
file missing from the table, and the dynamic loader outside libc.c.

    test_check_layers.py CHECK_LAYERS CC NM
"""

import os
import subprocess
import sys
import tempfile

HEADER = """/*
 * LAYERS (top to bottom)
 *   top    top.c
 *   middle mid_a.c mid_b.c
 *   base   base.c libc.c
 * END
 */
"""

LAYERED = {
    "top.c": "int mid_a(void); int base(void); int top(void) { return mid_a() + base(); }",
    "mid_a.c": "int mid_b(void); int mid_a(void) { return mid_b(); }",
    "mid_b.c": "int base(void); int mid_b(void) { return base(); }",
    "base.c": "int base(void) { return 1; }",
    "libc.c": "#include <dlfcn.h>\nvoid *real(void) { return dlsym(RTLD_NEXT, \"open\"); }",
}


def run(check, cc, nm, sources, header=HEADER):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "internal.h"), "w") as f:
            f.write(header)
        objs = []
        for name, text in sources.items():
            src = os.path.join(d, name)
            with open(src, "w") as f:
                f.write(text + "\n")
            obj = src + ".o"
            subprocess.run([cc, "-c", "-fPIC", "-o", obj, src], check=True)
            objs.append(obj)
        p = subprocess.run([sys.executable, check, "--nm", nm, os.path.join(d, "internal.h")] + objs,
                           capture_output=True, text=True)
        return p.returncode, p.stderr


def expect(label, got, rc, *needles):
    code, err = got
    ok = code == rc and all(n in err for n in needles)
    print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {code}" + ("" if ok else f"\n{err}"))
    return ok


def main():
    check, cc, nm = sys.argv[1:4]
    results = [expect("layered files pass", run(check, cc, nm, LAYERED), 0)]

    upward = dict(LAYERED, **{"base.c": "int top(void); int base(void) { return top(); }"})
    results.append(expect("a call upward fails", run(check, cc, nm, upward), 1,
                          "base.c (base) uses top, defined in top.c (top): a layer above it"))

    data = dict(LAYERED, **{
        "mid_b.c": "int mid_b(void) { return 0; } int mid_b_table = 1;",
        "base.c": "extern int mid_b_table; int base(void) { return mid_b_table; }",
    })
    results.append(expect("data of a higher layer fails", run(check, cc, nm, data), 1,
                          "base.c (base) uses mid_b_table, defined in mid_b.c (middle)"))

    cycle = dict(LAYERED, **{"mid_b.c": "int mid_a(void); int mid_b(void) { return mid_a(); }",
                             "mid_a.c": "int mid_b(void); int base(void);"
                                        " int mid_a(void) { return mid_b() + base(); }"})
    results.append(expect("a cycle within a layer fails", run(check, cc, nm, cycle), 1,
                          "a cycle between files: mid_a.c -> mid_b.c (mid_b) -> mid_a.c (mid_a)"))

    extra = dict(LAYERED, **{"new.c": "int base(void); int fresh(void) { return base(); }"})
    results.append(expect("a file outside the table fails", run(check, cc, nm, extra), 1,
                          "new.c is not in the LAYERS table"))

    gone = dict(LAYERED)
    del gone["mid_b.c"]
    gone["mid_a.c"] = "int mid_a(void) { return 0; }"
    results.append(expect("a table naming a missing file fails", run(check, cc, nm, gone), 1,
                          "mid_b.c is in the LAYERS table", "no object is built from it"))

    loader = dict(LAYERED, **{"top.c": "#include <dlfcn.h>\nint mid_a(void);"
                                       " void *top(void) { mid_a(); return dlsym(RTLD_NEXT, \"x\"); }"})
    results.append(expect("the loader outside libc.c fails", run(check, cc, nm, loader), 1,
                          "top.c (top) calls dlsym: only libc.c may call the dynamic loader"))

    results.append(expect("a header without a table is a usage error",
                          run(check, cc, nm, LAYERED, header="/* no table */\n"), 2, "no 'LAYERS' table"))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
