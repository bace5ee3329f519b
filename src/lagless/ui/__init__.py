"""The live console (`lagless ui`, see docs/ui.md) and the chart assets it shares with the static
pages."""
