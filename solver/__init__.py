"""The decision engine of gpu-preempt: rules over the snapshot models.

Data flows one way: snapshot (``models``) -> queue tree, usage and fair share
-> protections and candidate rules -> (next) the CP-SAT model and decisions.
Each rule lives in its own module, named after it.
"""
