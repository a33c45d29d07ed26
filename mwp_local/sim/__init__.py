"""Simulation support around the agents: clocks, mission files, behaviour models and drivers.

Nothing here decides protocol questions; it feeds time, seeds and scripted intentions to the
sans-IO agents and carries their Commands to the Group log.
"""
