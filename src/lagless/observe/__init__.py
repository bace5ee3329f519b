"""Observability: metrics, run timelines, lag, reports."""
