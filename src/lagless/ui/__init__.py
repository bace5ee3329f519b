"""The live console (`lagless ui`) and the chart assets it shares with the static pages."""
