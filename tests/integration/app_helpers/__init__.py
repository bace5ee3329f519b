"""Apps run by the App tests in subprocesses (``lagless run``)."""
