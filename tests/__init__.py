"""mwp_local test suite."""
