"""Capacity planning (docs/scenario-format.md): traces in, a replay through the decision engine, figures out.

* :mod:`.trace`: trace adapters to one canonical job table; :mod:`.adapters`: Philly runtimes as durations,
  Helios per-VC quotas as queues;
* :mod:`.workload`: a scenario's jobs (gangs, synthetic fields from a seed) and its starting cluster;
* :mod:`.simulator`: the event-driven replay, each cycle the engine of ``gpu-preempt cycle``;
  :mod:`.decision_log`: its decisions, kept small;
* :mod:`.metrics`: the summary figures; :mod:`.output` and :mod:`.plots`: the output folder;
  :mod:`.run`: one replay from file to folder;
* sweeps: :mod:`.sweep` (runs, content keys, cache), :mod:`.backends` (this process, local workers, Ray),
  :mod:`.size_search` (``--target``), :mod:`.table` (the compared figures), :mod:`.sweep_output` (the folder),
  :mod:`.run_sweep` (one sweep from file to folder).
"""

__all__ = []
