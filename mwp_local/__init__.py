"""mwp_local: a local sandbox for MissionWeaveProtocol 0.1."""
