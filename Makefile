# gs-cgen: `make test` runs the whole suite, `make demo` shows a live trace.
# Both install what they need first (scripts/setup.sh, idempotent, root).
PY := .venv/bin/python

.PHONY: setup test unit demo clean

setup:
	bash scripts/setup.sh

test: setup
	CI=$${CI:-} $(PY) -m pytest -q tests

unit: setup
	$(PY) -m pytest -q tests/unit

demo: setup
	bash examples/demo.sh

clean:
	rm -rf build .pytest_cache examples/build
