# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean java tools

$(STAMP): pyproject.toml constraints.txt setup.py scripts/compile_pyspark_zip.py $(wildcard src/lagless/spark/connector/_*.[ch] src/lagless/kafka/_*.[ch])
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "lagless needs Python 3.11 or newer")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'  # the tested versions
	$(BIN)/python scripts/compile_pyspark_zip.py
	@touch $(STAMP)

java:
	@command -v java >/dev/null 2>&1 || { echo "lagless: Java 17+ is needed for Spark: install it with 'apt-get install openjdk-17-jre-headless' (or your OS's JDK 17 package)"; exit 1; }

# Chromium and Prometheus for the browser and alert tests (installed where root can; else they skip)
tools:
	@bash scripts/install_tools.sh

demo: $(STAMP) java
	$(BIN)/lagless demo

# the integration tests mostly wait (group joins, JVM starts): four files run at once
test: $(STAMP) java tools
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 4 --dist loadfile tests

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b; done

# Stop the embedded broker (found in its per-user state directory) before deleting its state.
clean:
	-test -x $(BIN)/lagless && $(BIN)/lagless broker stop --purge
	rm -rf $(VENV) .lagless build src/*.egg-info
