"""The lagless command line (typer). The only place that configures logging."""
