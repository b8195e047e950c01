"""Reading snapshots: documents parsed safely, then built on one of two paths.

* :mod:`.document`: YAML and JSON parsed with bounded nesting and aliases, no duplicate keys.
* :mod:`.structs`: the document decoded (JSON bytes) or converted (parsed data) into typed msgspec structs.
* :mod:`.build`: the snapshot built from the structs, every check made on lists of values, once per distinct value
  where it can be; a large snapshot's jobs made when first read (:mod:`.job_list`).
* pydantic's validation of :class:`~gpu_preempt.models.Snapshot`: whatever the structs do not accept, with the
  error messages.

:mod:`.loader` holds the public functions (``load_snapshot``, ``parse_snapshot``, ``snapshot_from_data``,
``read_document``), re-exported by :mod:`gpu_preempt.models`. The package imports nothing at import time, so that
the snapshot model can import the job list from it.
"""

__all__ = []
