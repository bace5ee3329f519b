"""A librdkafka mock cluster in the test process whose requests can be made to fail.

:class:`lagless.broker.mock.MockCluster` holds its cluster in a child process, shared by a test
session. For a failure no group can be steered into on time (a commit refused by the broker at
one chosen moment), a test makes its own cluster here through librdkafka's mock API
(:class:`lagless.broker.mockapi.MockApi`: ``refuse`` answers the next requests of one kind with
the errors given, then serves them again as before). Other processes reach it over TCP like any
cluster while the test runs."""

from __future__ import annotations

from lagless.broker.mockapi import MockApi

OFFSET_COMMIT = 8  # the OffsetCommit request's API key


class FaultyMock(MockApi):
    """``with FaultyMock() as mock``: a one-broker mock cluster in this process, at
    ``mock.bootstrap``."""
