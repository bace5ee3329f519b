from pathlib import Path

import pytest

from lagless.config import KafkaSettings, load_settings
from lagless.errors import ConfigError


def test_to_librdkafka_maps_fields_and_reveals_secret_only_there() -> None:
    s = KafkaSettings(
        bootstrap="h1:9092,h2:9093",
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
        sasl_password="s3cret",  # type: ignore[arg-type]
        librdkafka={"socket.timeout.ms": "5000"},
    )
    conf = s.to_librdkafka()
    assert conf["bootstrap.servers"] == "h1:9092,h2:9093"
    assert conf["sasl.password"] == "s3cret"
    assert conf["socket.timeout.ms"] == "5000"
    assert "s3cret" not in repr(s)
    assert "s3cret" not in str(s.model_dump())
    assert "s3cret" not in s.describe()


def test_settings_are_frozen() -> None:
    s = KafkaSettings(bootstrap="h:1")
    with pytest.raises(ValueError):
        s.bootstrap = "other:2"  # type: ignore[misc]


def test_bad_bootstrap_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError, match="not HOST:PORT"):
        load_settings(bootstrap="no-port")


def test_precedence_flags_over_env_over_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "lagless.toml"
    cfg.write_text('[kafka]\nbootstrap = "file:1"\nclient_id = "from-file"\n')
    monkeypatch.delenv("LAGLESS_BOOTSTRAP", raising=False)
    assert load_settings(cfg).bootstrap == "file:1"
    monkeypatch.setenv("LAGLESS_BOOTSTRAP", "env:2")
    s = load_settings(cfg)
    assert (s.bootstrap, s.client_id) == ("env:2", "from-file")
    assert load_settings(cfg, bootstrap="flag:3").bootstrap == "flag:3"


def test_missing_or_broken_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("bootstrap = = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(bad)


def test_unknown_key_in_file_is_rejected(tmp_path: Path) -> None:
    cfg = tmp_path / "x.toml"
    cfg.write_text('bootstrapp = "typo:1"\n')
    with pytest.raises(ConfigError, match="bootstrapp"):
        load_settings(cfg)


def test_no_bootstrap_cannot_make_client_conf() -> None:
    with pytest.raises(ConfigError):
        KafkaSettings().to_librdkafka()


def test_unknown_lagless_variables_are_named_with_the_closest_setting() -> None:
    from lagless.config import unknown_variables

    env = {
        "LAGLESS_BOOTSTRAPS": "prod:9092",
        "LAGLESS_BOOTSTRAP": "ok:1",
        "LAGLESS_HOME": "/x",
        "LAGLESS_SPARK_PREFORK": "0",
        "LAGLESS_SASL_PASSWORD": "s",
        "LAGLESS_TEST_BOOTSTRAP": "h:1",  # the test suite's variables are not warned about
        "PATH": "/bin",
    }
    lines = unknown_variables(env)
    assert lines == [
        "LAGLESS_BOOTSTRAPS is not a lagless setting and is ignored "
        "(did you mean LAGLESS_BOOTSTRAP?)"
    ]
    assert unknown_variables({"LAGLESS_ZZZ": "1"}) == [
        "LAGLESS_ZZZ is not a lagless setting and is ignored"
    ]
    assert unknown_variables({"LAGLESS_SPARK_PREFOK": "0"}) == [
        "LAGLESS_SPARK_PREFOK is not a lagless setting and is ignored "
        "(did you mean LAGLESS_SPARK_PREFORK?)"
    ]
