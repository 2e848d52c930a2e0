"""The worker side of the parallel mode: the wire format and sockets, and the collector, learner and
evaluator processes that drive the worker classes (:mod:`sparring.worker`) for a commander."""
