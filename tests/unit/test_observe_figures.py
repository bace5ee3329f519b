"""The figures table in docs/observability.md is lagless.observe.figures.FIGURES."""

from pathlib import Path

from lagless.observe import figures

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def test_docs_carry_the_figures_table() -> None:
    assert figures.markdown_table() in DOC.read_text()


def test_every_sampler_metric_is_a_figure() -> None:
    metrics = {f.metric for f in figures.FIGURES}
    for name in (
        figures.GROUP_LAG_RECORDS, figures.GROUP_LAG_SECONDS, figures.GROUP_REBALANCES,
        figures.GROUP_MEMBERS, figures.GROUP_STATE, figures.TOPIC_END_OFFSET,
        figures.CLUSTER_UP, figures.SAMPLER_CYCLE_SECONDS,
    ):  # fmt: skip
        assert name in metrics
    assert figures.ENGINE_REBALANCE_CALLBACK_SECONDS in metrics
