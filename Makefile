# gs-cgen: `make test` runs the whole suite, `make demo` shows a live trace.
# Both install what they need first (scripts/setup.sh, idempotent, root).
PY := .venv/bin/python

.PHONY: setup test test-oldest unit demo clean fidelity bench

setup:
	bash scripts/setup.sh

test: setup
	.venv/bin/gs-cgen --version
	CI=$${CI:-} $(PY) -m pytest -q tests

# The same suite on the oldest releases pyproject.toml allows (own venv).
test-oldest:
	GS_CGEN_CONSTRAINTS=constraints-oldest.txt GS_CGEN_VENV=.venv-oldest bash scripts/setup.sh
	.venv-oldest/bin/gs-cgen --version
	CI=$${CI:-} .venv-oldest/bin/python -m pytest -q tests

unit: setup
	$(PY) -m pytest -q tests/unit

demo: setup
	bash examples/demo.sh

clean:
	rm -rf build .pytest_cache examples/build

# Differential test against gdb (fidelity/README.md): the C, Rust and C++ corpora at -O0..-O3
# and libpython3.11; tables on stdout, build/fidelity/report.json.
fidelity: setup
	$(PY) -m fidelity

# gs-cgen beside bpftrace, perf probe, raw ftrace uprobes, gdb and a BCC empty
# program on the same instruction (root; bench/README.md): issue #10's table
# as markdown on stdout, ~6 min; `make bench BENCH_ARGS=--quick` in < 2 min.
# bpftrace is installed here for the bench only (the test suite never needs it).
bench: setup
	command -v bpftrace >/dev/null || { apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q bpftrace; }
	$(PY) -m bench $(BENCH_ARGS)
