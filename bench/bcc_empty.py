"""The floor of the per-hit rows: BCC attaches a BPF program that returns
at once, to the same instruction the tracers probe.

    python bcc_empty.py BINARY SYMBOL PID

Prints "attached" once the uprobe is in place and runs until SIGINT, when
BCC detaches it.
"""
import signal
import sys

from bcc import BPF


def main() -> int:
    binary, symbol, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    bpf = BPF(text="int empty(void *ctx) { return 0; }")
    bpf.attach_uprobe(name=binary, sym=symbol, fn_name="empty", pid=pid)
    print("attached", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    bpf.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
