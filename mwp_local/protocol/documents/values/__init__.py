"""The typed document values: frozen, slotted dataclasses built on ``documents.wire.WireObject``.

One module per schema module of :mod:`mwp_local.protocol.documents`, with the same name: the schema
module holds the shapes and string enumerations, the module here the typed values built from them
(for example :class:`.work.WorkContract`, checked against ``WORK_CONTRACT``). They are kept apart so
that validating documents, which is all the runtime path does, never pays for building some seventy
dataclasses; the package :mod:`mwp_local.protocol.documents` imports these modules only when one of
their names is first used. Nothing here performs I/O.
"""
