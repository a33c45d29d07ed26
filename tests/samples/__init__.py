"""Tests of the sample missions."""
