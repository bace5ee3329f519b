"""``lagless ui``: a live web console for groups, lag and rebalances (see docs/ui.md)."""
