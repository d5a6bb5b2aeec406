"""rte.model.sharing: one object for many equal ones, in a table that stays bounded. Its users
are tested where they share: tests/consumer/test_one_pod_nodes.py (pods of one shape) and
tests/agent/test_pod_memory.py (the List reader's plain containers, the pod watch's records)."""

from rte.model.sharing import SharedValues


def test_equal_keys_get_the_first_value_and_the_table_stops_at_its_limit() -> None:
    shared: SharedValues[tuple[int, ...]] = SharedValues(2)
    first = tuple([1, 2])
    assert shared.share(first, first) is first
    again = tuple([1, 2])
    assert again is not first and shared.share(again, again) is first
    for n in range(100):  # every value different, as hostile input would be
        value = (n, n)
        assert shared.share(value, value) is value
    assert len(shared) == 2
