from lagless.kafka.offsets import topic_ranges
from tests.conftest import Cluster


def test_fixture_broker_creates_topics(cluster: Cluster, make_topic) -> None:  # type: ignore[no-untyped-def]
    topic = make_topic(partitions=4)
    ranges = topic_ranges(cluster.conf, topic)
    assert [r.partition for r in ranges] == [0, 1, 2, 3]
    assert all(r.start == 0 and r.end == 0 for r in ranges)
