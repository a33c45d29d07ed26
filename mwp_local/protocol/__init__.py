"""The protocol core: pure MissionWeaveProtocol 0.1 rules with no I/O.

Identifiers, the timestamp profile, canonical JSON, base64url, hashing, strict Ed25519, the
six-stage Signed Document Verification Profile, the key Registry, admission, document validation,
the state tables and errors. Nothing here touches files, sockets, clocks, threads, DuckDB or
widgets; adapters around it do.
"""
