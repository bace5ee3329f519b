"""Options of the lagless-kafka source and sink (Spark hands them over lower-cased)."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.spark.connector.options import SinkOptions, SourceOptions

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a, b"}


def test_parse_lower_cased_keys() -> None:
    opts = SourceOptions.parse(
        {
            **BASE,
            "startingoffsets": "earliest",
            "maxoffsetspertrigger": "500",
            "minpartitions": "4",
            "failondataloss": "false",
            "includeheaders": "true",
            "kafka.fetch.wait.max.ms": "20",
        }
    )
    assert opts.topics == ("a", "b")
    assert opts.start_position("latest") == "earliest"
    assert opts.max_offsets_per_trigger == 500
    assert opts.min_partitions == 4
    assert opts.fail_on_data_loss is False
    assert opts.include_headers is True
    assert opts.kafka == {"bootstrap.servers": "127.0.0.1:9092", "fetch.wait.max.ms": "20"}


def test_defaults_and_camel_case() -> None:
    opts = SourceOptions.parse({**BASE, "maxOffsetsPerTrigger": "7"})
    assert opts.max_offsets_per_trigger == 7
    assert opts.start_position("latest") == "latest"
    assert opts.start_position("earliest") == "earliest"
    assert opts.fail_on_data_loss is True
    assert opts.include_headers is False


def test_json_starting_offsets() -> None:
    opts = SourceOptions.parse({**BASE, "startingoffsets": '{"a": {"0": 42, "1": -2}}'})
    assert opts.start_position("latest") == {("a", 0): 42, ("a", 1): -2}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"subscribe": " , "}, "subscribe"),
        ({"kafka.bootstrap.servers": ""}, "bootstrap"),
        ({"assign": '{"a": [0]}'}, "assign is not supported"),
        ({"subscribepattern": "a.*"}, "subscribePattern"),
        ({"maxoffsetspertrigger": "0"}, "at least 1"),
        ({"maxoffsetspertrigger": "ten"}, "integer"),
        ({"failondataloss": "maybe"}, "true or false"),
        ({"startingoffsets": "yesterday"}, "earliest, latest or JSON"),
        ({"startingoffsets": '{"c": {"0": 1}}'}, "not subscribed"),
        ({"startingoffsets": '{"a": {"x": 1}}'}, "not a partition"),
        ({"startingoffsets": '{"a": {"0": -5}}'}, "not a partition"),
        ({"endingoffsets": "earliest"}, "cannot be earliest"),
    ],
)
def test_bad_options_are_one_line_errors(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        SourceOptions.parse({**BASE, **extra})
    assert "\n" not in str(info.value)


def test_sink_options() -> None:
    opts = SinkOptions.parse({"kafka.bootstrap.servers": "h:1", "topic": "out", "batchid": "3"})
    assert (opts.topic, opts.batch_id, opts.kafka) == ("out", 3, {"bootstrap.servers": "h:1"})
    assert SinkOptions.parse({"kafka.bootstrap.servers": "h:1"}).topic is None


def test_unknown_options_are_never_dropped() -> None:
    with pytest.raises(ConfigError, match="unknown option 'startingoffset'") as info:
        SourceOptions.parse({**BASE, "startingOffset": "earliest"})  # typo of startingOffsets
    assert "\n" not in str(info.value) and "startingOffsets" in str(info.value)
    with pytest.raises(ConfigError, match="unknown option 'key'"):
        SinkOptions.parse({"kafka.bootstrap.servers": "h:1", "key": "k"})
    assert SinkOptions.parse({"kafka.bootstrap.servers": "h:1", "checkpointlocation": "/c"})


def test_spark_options_with_their_meaning() -> None:
    opts = SourceOptions.parse(
        {
            **BASE,
            "startingtimestamp": "1700000000000",
            "startingoffsetsbytimestamp": '{"a": {"0": 5}}',
            "startingoffsetsbytimestampstrategy": "LATEST",
            "minoffsetspertrigger": "100",
            "maxtriggerdelay": "30s",
            "maxrecordsperpartition": "1000",
            "groupidprefix": "etl",
            "fetchoffset.numretries": "5",
            "fetchoffset.retryintervalms": "0",
        }
    )
    assert opts.starting_times() == 1_700_000_000_000  # startingTimestamp wins
    assert opts.timestamp_strategy == "latest"
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 30_000)
    assert opts.max_records_per_partition == 1000
    assert (opts.fetch_offset_retries, opts.fetch_offset_retry_interval_ms) == (5, 0)
    assert opts.reader_conf()["group.id"].startswith("etl-")
    assert SourceOptions.parse(BASE).max_trigger_delay_ms == 15 * 60_000
    fixed = SourceOptions.parse({**BASE, "kafka.group.id": "mine"})
    assert fixed.reader_conf()["group.id"] == "mine" and "group.id" not in fixed.kafka
    by_ts = SourceOptions.parse({**BASE, "endingoffsetsbytimestamp": '{"a": {"0": 9}}'})
    assert by_ts.ending_times() == {"a": {"0": 9}}


@pytest.mark.parametrize("key", ["endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"])
def test_ending_options_are_rejected_on_a_stream(key: str) -> None:
    value = (
        "latest"
        if key == "endingoffsets"
        else "5"
        if key == "endingtimestamp"
        else '{"a": {"0": 5}}'
    )
    opts = SourceOptions.parse({**BASE, key: value})
    with pytest.raises(ConfigError, match="batch reads only"):
        opts.check_streaming()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"maxtriggerdelay": "soon"}, "maxTriggerDelay"),
        ({"startingoffsetsbytimestampstrategy": "earliest"}, "error or latest"),
        ({"startingoffsetsbytimestamp": '{"a": {"0": -1}}'}, "milliseconds"),
        ({"fetchoffset.numretries": "0"}, "at least 1"),
        ({"kafka.auto.offset.reset": "earliest"}, "use startingOffsets"),
        ({"kafka.value.deserializer": "x"}, "binary"),
        ({"kafka.ssl.truststore.location": "/ts.jks"}, "JKS truststore is Java-only"),
        ({"kafka.ssl.truststore.password": "pw"}, "Java-only Kafka client properties"),
        ({"kafka.sasl.jaas.config": "com.sun.Krb5LoginModule required;"}, "PlainLoginModule"),
    ],
)
def test_bad_spark_options_are_one_line_errors(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        SourceOptions.parse({**BASE, **extra})
    assert "\n" not in str(info.value)


def test_java_client_properties_are_translated() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="s3cr=t";'
    )
    opts = SourceOptions.parse(
        {
            **BASE,
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": jaas,
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": "/ca.pem",
        }
    )
    assert opts.kafka == {
        "bootstrap.servers": "127.0.0.1:9092",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.password": "s3cr=t",
        "sasl.username": "alice",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/ca.pem",
    }
