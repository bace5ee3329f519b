"""Producer profiles: librdkafka settings for throughput, latency or durability.

| setting | throughput | latency | durability | why |
|---|---|---|---|---|
| acks | 1 | 1 | all | ``all`` waits for every in-sync replica: no loss on a leader failure, one more round trip. ``1`` waits for the leader only. |
| enable.idempotence | false | false | true | sequence numbers: retries never duplicate or reorder (needs acks=all, in-flight <= 5). |
| linger.ms | 50 | 0 | 10 | waiting lets batches fill: fewer, larger requests; 0 sends at once. |
| batch.size | 1 MiB | 16 KiB | 256 KiB | the most bytes per partition batch; large batches compress better. |
| compression.type | lz4 | none | zstd | lz4 is cheap on CPU for high rates; none adds no CPU latency; zstd saves bytes on disk and wire. |
| max.in.flight.requests.per.connection | 5 | 1 | 5 | more requests in flight hide round trips; 1 keeps a request from queueing behind another. |
| queue.buffering.max.kbytes | 1 GiB | 64 MiB | 256 MiB | room to absorb bursts before produce() raises BufferError. |
| message.timeout.ms | 120000 | 30000 | 300000 | how long a record may wait for delivery before it is reported failed. |
| retries / retry.backoff.ms | default / 100 | default / 20 | default / 100 | librdkafka retries transient errors; failures still surface in the delivery report. |
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Profile(StrEnum):
    THROUGHPUT = "throughput"
    LATENCY = "latency"
    DURABILITY = "durability"


PROFILES: dict[Profile, dict[str, Any]] = {
    Profile.THROUGHPUT: {
        "acks": "1",
        "enable.idempotence": False,
        "linger.ms": 50,
        "batch.size": 1_048_576,
        "compression.type": "lz4",
        "max.in.flight.requests.per.connection": 5,
        "queue.buffering.max.kbytes": 1_048_576,
        "queue.buffering.max.messages": 1_000_000,
        "message.timeout.ms": 120_000,
        "retry.backoff.ms": 100,
    },
    Profile.LATENCY: {
        "acks": "1",
        "enable.idempotence": False,
        "linger.ms": 0,
        "batch.size": 16_384,
        "compression.type": "none",
        "max.in.flight.requests.per.connection": 1,
        "queue.buffering.max.kbytes": 65_536,
        "message.timeout.ms": 30_000,
        "retry.backoff.ms": 20,
    },
    Profile.DURABILITY: {
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 10,
        "batch.size": 262_144,
        "compression.type": "zstd",
        "max.in.flight.requests.per.connection": 5,
        "queue.buffering.max.kbytes": 262_144,
        "message.timeout.ms": 300_000,
        "retry.backoff.ms": 100,
    },
}


def profile_conf(profile: Profile | str) -> dict[str, Any]:
    """The librdkafka settings of ``profile`` (a copy)."""
    return dict(PROFILES[Profile(profile)])
