"""KAI's reclaimable chunks (docs/rules.md, "The reclaim line"): a victim is evicted whole by its largest chunk, per
resource."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_preempt.formulate.victims import whole_chunk
from gpu_preempt.models import snapshot_from_data

REQUESTS = [{"gpu": 1}, {"gpu": 2, "cpu": 4}, {"cpu": 1}, {"gpu": 0, "memory": "1Gi"}]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(REQUESTS),
    st.lists(st.one_of(st.none(), st.sampled_from(REQUESTS)), min_size=1, max_size=5),
    st.data(),
)
def test_the_chunk_is_the_core_or_the_largest_surplus_task(shared, own, data):
    """The core (the first min_available running tasks, summed) or any one task after it, whichever is larger in
    each resource; tasks asking for the job's requests or for their own."""
    minimum = data.draw(st.integers(1, len(own)))
    tasks = [{"node": "n"} if r is None else {"node": "n", "resources": r} for r in own]
    job = {"name": "j", "queue": "q", "task_resources": shared, "min_available": minimum, "tasks": tasks}
    base = {"now": 0, "nodes": [{"name": "n", "resources": {"gpu": 99, "cpu": 99, "memory": "1Ti"}}]}
    snapshot = snapshot_from_data({**base, "queues": [{"name": "q"}], "jobs": [job]})
    (model,) = snapshot.jobs
    running = list(model.tasks)
    asks = [model.requests(t) for t in running]
    expected: dict[str, int] = {}
    for request in asks[:minimum]:
        for r, a in request.items():
            expected[r] = expected.get(r, 0) + a
    for request in asks[minimum:]:
        for r, a in request.items():
            expected[r] = max(expected.get(r, 0), a)
    assert whole_chunk(model, running) == expected
