import json
from itertools import islice

import pytest

from lagless.errors import ConfigError
from lagless.produce.producer import check_load_args
from lagless.produce.profiles import PROFILES, Profile, profile_conf
from lagless.produce.workloads import (
    ID_HEADER,
    MALFORMED_HEADER,
    Malformation,
    Workload,
    WorkloadSpec,
    generate,
    parse_sleep_range,
)


def test_jobs_have_sleep_in_range_and_keys() -> None:
    spec = WorkloadSpec(Workload.JOBS, keys=4, sleep_ms=(10, 30), seed=7)
    recs = list(islice(generate(spec), 200))
    docs = [json.loads(r.value) for r in recs]
    assert {d["id"] for d in docs} == {str(i) for i in range(200)}
    assert all(10 <= d["sleep_ms"] <= 30 for d in docs)
    assert {r.key for r in recs} == {b"k0", b"k1", b"k2", b"k3"}
    assert all(
        dict(r.headers)[ID_HEADER] == d["id"].encode() for r, d in zip(recs, docs, strict=True)
    )


def test_events_bad_fraction_marks_every_malformed_record() -> None:
    spec = WorkloadSpec(Workload.EVENTS, bad_fraction=0.3, seed=3, id_prefix="o-")
    recs = list(islice(generate(spec), 1000))
    bad = [r for r in recs if r.malformed is not None]
    assert 200 < len(bad) < 400
    assert {r.malformed for r in bad} == set(Malformation)
    for r in recs:
        headers = dict(r.headers)
        assert headers[ID_HEADER] == r.id.encode()
        if r.malformed is None:
            doc = json.loads(r.value)
            assert set(doc) == {"order_id", "user_id", "amount", "currency", "country", "event_ts"}
            assert doc["amount"] > 0
            assert MALFORMED_HEADER not in headers
        else:
            assert headers[MALFORMED_HEADER] == r.malformed.value.encode()


@pytest.mark.parametrize("kind", list(Malformation))
def test_each_malformation_is_really_malformed(kind: Malformation) -> None:
    spec = WorkloadSpec(Workload.EVENTS, bad_fraction=1.0, seed=11)
    rec = next(r for r in generate(spec) if r.malformed is kind)
    if kind is Malformation.BROKEN_JSON:
        with pytest.raises(json.JSONDecodeError):
            json.loads(rec.value)
        return
    doc = json.loads(rec.value)
    if kind is Malformation.MISSING_FIELD:
        assert "amount" not in doc
    elif kind is Malformation.WRONG_TYPE:
        assert isinstance(doc["amount"], str)
    else:
        assert doc["amount"] < 0


def test_sleep_range_parsing() -> None:
    assert parse_sleep_range("10:30") == (10, 30)
    assert parse_sleep_range("5") == (5, 5)
    for bad in ("a:b", "30:10", "-1:5"):
        with pytest.raises(ConfigError):
            parse_sleep_range(bad)


def test_load_args_validation() -> None:
    check_load_args(10, None, None)
    check_load_args(None, 100.0, 2.0)
    for args in (
        (None, None, None),
        (-1, None, None),
        (5, 10.0, 1.0),
        (None, 0.0, 1.0),
        (None, 5.0, None),
    ):
        with pytest.raises(ConfigError):
            check_load_args(*args)


def test_profiles_are_consistent() -> None:
    assert set(PROFILES) == set(Profile)
    durable = profile_conf("durability")
    assert durable["acks"] == "all" and durable["enable.idempotence"] is True
    assert durable["max.in.flight.requests.per.connection"] <= 5
    assert profile_conf("latency")["linger.ms"] == 0
    assert profile_conf("throughput")["linger.ms"] > 0
