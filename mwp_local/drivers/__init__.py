"""Drivers: what runs the sans-IO agents against the Group log.

``sandbox`` (the Sandbox: a mission file, its Organization, log and agents), ``step`` (step mode:
one seeded action at a time on a virtual clock) and ``threads`` (threads mode: a thread per
agent on a scaled clock) side by side, ``bus`` and ``threaded_bus`` (the Sandbox's use of the
delivery bus), ``mission_file`` (TOML mission files into ``agents.specs``), ``clock`` (injected
clocks), ``external`` (the simulated external tool service) and ``reports`` (what a step, a run
and a restart report). Nothing here decides protocol questions.
"""
