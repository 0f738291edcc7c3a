"""python3.11 workload for `make bench`: N item assignments on a dict
subclass, each one call of PyDict_SetItem (dict_ass_sub; an exact dict would
take the specialized STORE_SUBSCR_DICT path, which does not call it).

    python3.11 dict_loop.py N

The same protocol as target.c's loop: "ready PID", a line on stdin, the
loop, "elapsed_ns N NS", exit after one more line.
"""
import os
import sys
import time


class Table(dict):
    pass


def main() -> int:
    n = int(sys.argv[1])
    keys = [f"k{i}" for i in range(1024)]
    table = Table()
    print(f"ready {os.getpid()}", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter_ns()
    for i in range(n):
        table[keys[i & 1023]] = i
    t1 = time.perf_counter_ns()
    print(f"elapsed_ns {n} {t1 - t0}", flush=True)
    sys.stdin.readline()
    return 0


if __name__ == "__main__":
    sys.exit(main())
