"""Capacity planning (spec simulate-v1): traces in, a replay through the decision engine, figures out.

* :mod:`.trace`: trace adapters to one canonical job table;
* :mod:`.workload`: a scenario's jobs (gangs, synthetic fields from a seed) and its starting cluster;
* :mod:`.simulator`: the event-driven replay, each cycle the engine of ``gpu-preempt cycle``;
* :mod:`.metrics`: the summary figures; :mod:`.output`: the output folder and plots.
"""
