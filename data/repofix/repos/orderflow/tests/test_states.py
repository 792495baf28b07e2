from orderflow import TRANSITIONS, State, can_transition, is_terminal


def test_allowed_and_forbidden_transitions():
    """The transition table allows the happy path and forbids skipping ahead."""
    assert can_transition(State.NEW, State.PAID) is True
    assert can_transition(State.NEW, State.PACKED) is True
    assert can_transition(State.PACKED, State.SHIPPED) is True
    assert can_transition(State.DELIVERED, State.REFUNDED) is True
    assert can_transition(State.NEW, State.SHIPPED) is False
    assert can_transition(State.SHIPPED, State.CANCELLED) is False
    assert can_transition(State.PAID, State.REFUNDED) is False
    assert can_transition(State.PAID, State.NEW) is False


def test_terminal_states():
    """Only cancelled and refunded are terminal."""
    terminal = sorted(s.value for s in State if is_terminal(s))
    assert terminal == ["cancelled", "refunded"]
    assert len(TRANSITIONS) == 7


def test_state_values_are_strings():
    """States compare equal to their lowercase names and round-trip from them."""
    assert State("paid") is State.PAID
    assert State.DELIVERED == "delivered"
