"""Options of the lagless-kafka source and sink (Spark hands them over lower-cased)."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.spark.options import SinkOptions, SourceOptions

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
