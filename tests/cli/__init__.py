"""Tests of the mwp-local command line."""
