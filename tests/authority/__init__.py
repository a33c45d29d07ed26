"""Tests of the Group Authority."""
