"""One console: its sampler, store and instances, started and stopped together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lagless.ui.cluster import ClusterReads
from lagless.ui.exporter import SamplerCollector, registry
from lagless.ui.model import Snapshot
from lagless.ui.records import PageReads
from lagless.ui.sampler import Sampler
from lagless.ui.scrape import Instances
from lagless.ui.store import STORE_FILE, Store


@dataclass(frozen=True)
class ConsoleConfig:
    """``lagless ui``'s settings, validated by the CLI."""

    state_dir: Path
    interval: float = 1.0
    retention: float = 86400.0
    max_bytes: int = 256 * 1024 * 1024
    scrape: tuple[str, ...] = ()
    lab_dir: Path = Path("out/lab")
    cluster_name: str = ""


class Console:
    """Owns the sampler (a thread), the store, the instances it watches and the pages' reads
    of records."""

    def __init__(self, conf: Mapping[str, Any], config: ConsoleConfig) -> None:
        self.conf = dict(conf)
        self.config = config
        self.store = Store(config.state_dir / STORE_FILE, config.retention, config.max_bytes)
        self.instances = Instances(config.state_dir, config.scrape)
        self.reads = ClusterReads(conf)
        self.pages = PageReads(conf)
        self.sampler = Sampler(
            self.reads, config.interval, instances=self.instances.look, sink=self.store.write
        )
        self.metrics = registry(
            SamplerCollector(lambda: self.latest, self.sampler.rebalances.total)
        )

    @property
    def latest(self) -> Snapshot:
        return self.sampler.latest

    def start(self) -> Console:
        self.sampler.start()
        return self

    def stop(self) -> None:
        self.sampler.stop()
        self.reads.close()
        self.pages.close()
        self.store.close()

    def scraped(self) -> Sequence[str]:
        return self.config.scrape
