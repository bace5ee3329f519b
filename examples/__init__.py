"""Example apps (docs/app.md); the test suite runs each against the embedded broker."""
