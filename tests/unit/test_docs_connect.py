"""docs/connect.md: every TOML example loads into the librdkafka configuration it promises,
every setting is in its table, and the mistakes it lists are refused in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lagless.config import KafkaSettings, load_settings
from lagless.errors import ConfigError

DOC = Path(__file__).resolve().parents[2] / "docs" / "connect.md"
TOML = re.compile(r"```toml\n(.*?)\n```", re.DOTALL)


def examples() -> list[str]:
    return TOML.findall(DOC.read_text())


def test_every_toml_example_gives_its_librdkafka_properties(tmp_path: Path) -> None:
    found = examples()
    assert len(found) == 6
    confs = []
    for i, text in enumerate(found):
        path = tmp_path / f"{i}.toml"
        path.write_text(text)
        confs.append(load_settings(path).to_librdkafka())
    full, plain, scram, oauth, tls, mtls = confs
    assert full["security.protocol"] == "SASL_SSL" and full["sasl.mechanism"] == "SCRAM-SHA-512"
    assert (full["sasl.password"], full["ssl.ca.location"]) == ("change-me", "/etc/kafka/ca.pem")
    assert full["socket.keepalive.enable"] == "true" and full["client.id"] == "payments-service"
    assert (plain["sasl.mechanism"], plain["sasl.username"]) == ("PLAIN", "API_KEY")
    assert (scram["security.protocol"], scram["sasl.mechanism"]) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-256"
    )  # fmt: skip
    assert oauth["sasl.oauthbearer.method"] == "oidc"
    assert oauth["sasl.oauthbearer.client.secret"] == "change-me"
    assert oauth["sasl.oauthbearer.token.endpoint.url"].startswith("https://")
    assert tls == {"bootstrap.servers": "kafka.example.com:9093", "client.id": "lagless",
                   "security.protocol": "SSL", "ssl.ca.location": "/etc/kafka/ca.pem"}  # fmt: skip
    assert mtls["ssl.certificate.location"] == "/etc/kafka/client.pem"
    assert (mtls["ssl.key.location"], mtls["ssl.key.password"]) == (
        "/etc/kafka/client.key", "change-me"
    )  # fmt: skip


def test_every_setting_is_in_the_table_with_its_variable() -> None:
    text = DOC.read_text()
    for name in KafkaSettings.model_fields:
        assert f"| `{name}` | `LAGLESS_{name.upper()}` |" in text, name


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"sasl_mechanism": "PLAIN", "sasl_username": "u", "sasl_password": "p"},
         "sasl_mechanism PLAIN needs security_protocol SASL_SSL"),
        ({"security_protocol": "SASL_SSL"}, "needs a sasl_mechanism"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256"},
         "needs sasl_username and sasl_password"),
        ({"ssl_ca_location": "/ca.pem"}, "ssl_* settings need security_protocol SSL"),
        ({"security_protocol": "SSL", "ssl_certificate_location": "/c.pem"},
         "mTLS needs both"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
          "sasl_oauthbearer_client_id": "x"}, "OAUTHBEARER (OIDC) needs"),
    ],
)  # fmt: skip
def test_settings_that_cannot_work_together_are_one_line(
    tmp_path: Path, values: dict[str, str], message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("".join(f'{k} = "{v}"\n' for k, v in values.items()))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_misspelt_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('[kafka]\nbootstrp = "h:1"\n')
    with pytest.raises(
        ConfigError, match=r"'bootstrp' is not a setting \(did you mean bootstrap\?\)"
    ):
        load_settings(path)


def test_the_librdkafka_variable_is_a_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAGLESS_LIBRDKAFKA", '{"linger.ms": "5"}')
    conf = load_settings(bootstrap="h:1").to_librdkafka()
    assert conf["linger.ms"] == "5"
