"""What an App reads from its environment (what the manifests set)."""

from __future__ import annotations

import pytest

from lagless.app import environment
from lagless.errors import ConfigError
from tests.deploy.apps import payments_app


def test_the_variables_are_read_and_a_bad_port_is_one_line() -> None:
    env = environment.read(
        {"LAGLESS_METRICS_PORT": "9000", "LAGLESS_METRICS_HOST": "0.0.0.0",
         "LAGLESS_STATIC_ID": "pay-0"}
    )  # fmt: skip
    assert (env.metrics_port, env.metrics_host, env.static_id) == (9000, "0.0.0.0", "pay-0")
    assert environment.read({}) == environment.AppEnvironment()
    with pytest.raises(ConfigError, match=r"LAGLESS_METRICS_PORT='90x0' is not a port"):
        environment.read({"LAGLESS_METRICS_PORT": "90x0"})


def test_the_pod_name_wins_over_the_code_and_a_flag_over_the_pod_name() -> None:
    env = environment.read({"LAGLESS_STATIC_ID": "pay-2"})
    app = payments_app(static_id="pay")
    assert app.engine_configs()[0].static_id == "pay"
    assert app.engine_configs(env)[0].static_id == "pay-2"
    assert app.configured(static_id="flag").engine_configs(env)[0].static_id == "flag"


def test_the_variables_are_known_settings() -> None:
    from lagless.config import unknown_variables

    assert unknown_variables({name: "1" for name in environment.VARIABLES}) == []
