"""Storage adapters around the protocol core: the Group log, projections, blobs, exports.

All SQL lives here. The core hands over immutable records (``records``); a store commits a
``Batch`` atomically or not at all.
"""
