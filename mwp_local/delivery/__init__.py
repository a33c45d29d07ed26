"""The in-process delivery bus (§16, §17): ``frames`` (the §17 frame documents), ``bus`` (per-
subscriber sessions with seeded faults, ACK, backpressure, the bounded online window),
``client`` (a runtime's end of a session), ``snapshots`` (signed Group Snapshots), ``config``
(the mission file's ``[delivery]`` table), ``offline`` (bounded offline execution, §11.5),
``driver`` (the Sandbox's use of the bus) and ``threaded`` (the bus shared by threads mode).

Import the submodules directly; this package imports nothing so that ``mwp_local.drivers`` can read
``config`` without pulling in the agents.
"""
