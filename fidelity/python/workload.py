"""The libpython fidelity workload: a fixed amount of work through many
parts of the interpreter (dicts, str, int, float, complex, lists, tuples,
attributes, exceptions, formatting), the same in every run. Run with
`python3.11 -S -B` and PYTHONHASHSEED=0 (no site import, no .pyc written,
fixed string hashes). It prints nothing: its output would mix into the
tracer's."""


class Record:
    def __init__(self, name, size):
        self.name = name
        self.size = size

    def describe(self):
        return "%s:%d" % (self.name, self.size)


def strings(count):
    words = []
    for i in range(count):
        words.append("word%d" % i)
    text = "-".join(words)
    parts = text.split("-")
    upper = text.upper().replace("WORD", "w")
    return len(parts) + len(upper) + len(format(3.25, ".3f")) + len(repr(1.5e300))


def numbers(count):
    total = 0
    value = 1.0
    for i in range(count):
        total += int("12%d" % i) * i
        value = value * 1.5 + float("0.25")
        total += i ** 3 // 7
    z = complex(1.5, -2.0) * complex(0.5, 4.0) + complex(3, 1)
    return total + int(value) + int(abs(z))


def containers(count):
    table = {}
    for i in range(count):
        table["k%d" % i] = Record("r%d" % i, i)
    keys = sorted(table, reverse=True)
    pairs = [(k, table[k].describe()) for k in keys[:5]]
    merged = dict(pairs)
    return len(merged) + len(tuple(keys)) + sum(r.size for r in table.values())


def errors(count):
    caught = 0
    for i in range(count):
        try:
            {}["missing%d" % i]
        except KeyError:
            caught += 1
        try:
            getattr(Record("x", 1), "absent")
        except AttributeError:
            caught += 1
    return caught


def main():
    checksum = strings(20) + numbers(20) + containers(20) + errors(5)
    return 0 if checksum > 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
