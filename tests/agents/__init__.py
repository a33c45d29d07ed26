"""Tests of the simulated agents."""
