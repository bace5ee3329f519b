"""The ``lagless-kafka`` Python Data Source: Kafka for PySpark (source, sink, options,
offsets, fetch, the C range reader, the session that registers it). Knows nothing of the
records' format."""
