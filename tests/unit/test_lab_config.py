"""The lab's profiles: --profile article is the article's size and shape; options given win;
bad values are one ConfigError line."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.lab.config import ARTICLE_WINDOW_S, COMPRESSED_WINDOW_S, LabConfig, profile


def test_article_profile_is_the_articles_experiment() -> None:
    config = profile("article")
    assert (config.topology, config.instances, config.partitions, config.work_ms) == (
        "article", 3, 48, 1,
    )  # fmt: skip
    assert (config.instances2, config.partitions2, config.work2_ms) == (4, 64, 3.5)
    assert (config.rate, config.rollouts, config.window_s) == (3600.0, 4, COMPRESSED_WINDOW_S)
    assert config.spacing_s == COMPRESSED_WINDOW_S / 4
    assert profile("article", article_time=True).window_s == ARTICLE_WINDOW_S == 1800.0


def test_options_given_win_and_none_keeps_the_profiles() -> None:
    config = profile("article", rate=1200.0, partitions=None, rollouts=2)
    assert (config.rate, config.partitions, config.rollouts) == (1200.0, 48, 2)
    assert profile("default") == LabConfig()
    assert profile("default").to_json()["topology"] == "single"
    assert "partitions2" in profile("article").to_json()


@pytest.mark.parametrize(
    ("name", "given", "message"),
    [
        ("artcle", {}, "--profile 'artcle'"),
        ("default", {"topology": "dual"}, "--topology 'dual'"),
        ("article", {"partitions2": 2}, "--partitions2 must be at least --instances2"),
        ("default", {"work2_ms": float("nan")}, "--work2-ms must be a finite number"),
        ("default", {"window_s": -1.0}, "--window must be 0 or more"),
    ],
)
def test_bad_values_are_one_line(name: str, given: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        profile(name, **given)


def test_article_time_needs_the_article_profile() -> None:
    with pytest.raises(ConfigError, match="--article-time applies to --profile article"):
        profile("default", article_time=True)


def test_a_grace_period_is_kept_and_checked() -> None:
    assert LabConfig(grace_period_s=48.0).to_json()["grace_period_s"] == 48.0
    assert "grace_period_s" not in LabConfig().to_json()  # none: instances drain as long as needed
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigError, match="grace period"):
            LabConfig(grace_period_s=bad)
