"""Workers: where handlers run (threads, processes, an event loop) behind one protocol, the
rules a handler call follows (retries, batches) and the inbox finished tasks come back through."""
