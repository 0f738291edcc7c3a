"""--metrics [HOST:]PORT as the command line reads it: host 127.0.0.1 by
default, IPv6 in brackets; anything else is bad usage (exit 2)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from gs_cgen.cli import cli


@pytest.mark.parametrize("value, address", [
    ("9400", ("127.0.0.1", 9400)), ("0", ("127.0.0.1", 0)),
    ("0.0.0.0:9400", ("0.0.0.0", 9400)), ("localhost:1", ("localhost", 1)),
    ("[::1]:9400", ("::1", 9400)), ("[::]:65535", ("::", 65535)),
])
def test_addresses(value, address):
    from gs_cgen.cli import _MetricsAddress
    assert _MetricsAddress().convert(value, None, None) == address


@pytest.mark.parametrize("value", ["abc", "70000", "host:", "::1:9400", "-1", "1.2.3.4:x"])
def test_bad_addresses_are_bad_usage(value):
    result = CliRunner().invoke(cli, ["trace", "-t", "/bin/true", "-s", "trace main { count c; }",
                                      "--emit-c", "--metrics", value])
    assert result.exit_code == 2
    assert f"Invalid value for '--metrics': '{value}' is not [HOST:]PORT" in result.output
