import pytest

from gridrobot import Grid, Robot, manhattan, most_visited, revisited, visit_counts


def test_grid_bounds_are_exclusive_at_width_and_height():
    """Cells run from 0 to width-1 and 0 to height-1."""
    g = Grid(3, 2)
    cells = [(0, 0), (2, 1), (3, 1), (2, 2), (-1, 0), (0, -1)]
    assert [g.in_bounds(c) for c in cells] == [True, True, False, False, False, False]


def test_grid_validation_and_free_cells():
    """Dimensions must be positive, obstacles inside; free cells exclude obstacles."""
    with pytest.raises(ValueError):
        Grid(0, 4)
    with pytest.raises(ValueError):
        Grid(2, 2, obstacles=[(2, 0)])
    g = Grid(4, 3, obstacles=[(1, 1), (1, 1), (3, 2)])
    assert (g.free_cell_count(), g.is_free((1, 1)), g.is_free((0, 1))) == (10, False, True)


def test_robot_defaults_and_start_validation():
    """A robot starts at (0, 0) facing north; it cannot start on an obstacle or outside."""
    r = Robot(Grid(2, 2))
    assert (r.position, r.heading, r.history) == ((0, 0), "N", [(0, 0)])
    with pytest.raises(ValueError):
        Robot(Grid(2, 2, obstacles=[(0, 0)]))
    with pytest.raises(ValueError):
        Robot(Grid(2, 2), start=(0, 2))
    with pytest.raises(ValueError):
        Robot(Grid(2, 2), heading="X")


def test_execute_square_route():
    """F2 R F3 R F1 from (0, 0) facing north ends at (3, 1) facing south."""
    r = Robot(Grid(5, 5))
    assert r.execute("F2 R F3 R F1") == (3, 1)
    assert r.heading == "S"


def test_move_stops_at_edge_of_grid():
    """Moving beyond the edge stops on the last cell and counts one bump."""
    r = Robot(Grid(4, 4), start=(1, 1), heading="E")
    assert r.move(5) == 2
    assert (r.position, r.bumps) == ((3, 1), 1)


def test_move_exactly_to_edge_does_not_bump():
    """Moving exactly to the last cell is a full move with no bump."""
    r = Robot(Grid(4, 4), start=(0, 0), heading="N")
    assert (r.move(3), r.position, r.bumps) == (3, (0, 3), 0)


def test_move_stops_before_obstacle():
    """The robot halts on the cell just before an obstacle."""
    r = Robot(Grid(6, 6, obstacles=[(0, 3)]))
    assert r.execute("F5") == (0, 2)
    assert r.history == [(0, 0), (0, 1), (0, 2)]


def test_backward_moves_against_heading_and_zero_move():
    """B moves opposite to the heading; a zero move does nothing; negative is an error."""
    r = Robot(Grid(5, 5), start=(2, 2), heading="E")
    assert r.execute("B2") == (0, 2)
    assert (r.heading, r.move(0), r.position) == ("E", 0, (0, 2))
    with pytest.raises(ValueError):
        r.move(-1)


def test_facing_west_and_south_moves():
    """Forward while facing west decreases x; backward while facing south increases y."""
    r = Robot(Grid(5, 5), start=(4, 0), heading="W")
    assert r.execute("F3 L B2") == (1, 2)
    assert r.history == [(4, 0), (3, 0), (2, 0), (1, 0), (1, 1), (1, 2)]


def test_distance_from_start_and_max_distance():
    """Distance is Manhattan from the start; max distance is the farthest point of the path."""
    r = Robot(Grid(6, 6), start=(1, 1))
    r.execute("F3 R F2 R F4")
    assert (r.position, r.distance_from_start(), r.max_distance()) == ((3, 0), 3, 5)


def test_visited_cells_and_counts_with_revisit():
    """Going forth and back counts the cells once each but the counts twice."""
    r = Robot(Grid(3, 3))
    r.execute("F2 B2")
    assert r.visited_cells() == 3
    assert r.visit_counts() == {(0, 0): 2, (0, 1): 2, (0, 2): 1}


def test_coverage_excludes_obstacles():
    """Coverage is visited cells over free cells."""
    r = Robot(Grid(2, 3, obstacles=[(1, 0), (1, 2)]))
    r.execute("F2")
    assert r.coverage() == 0.75


def test_path_helpers():
    """Manhattan is symmetric, revisited cells are sorted, ties go to the first reached cell."""
    history = [(2, 2), (1, 2), (2, 2), (1, 2), (0, 0)]
    assert manhattan((-1, 4), (2, 0)) == 7
    assert visit_counts([]) == {}
    assert revisited(history) == [(1, 2), (2, 2)]
    assert revisited(history, at_least=1) == [(0, 0), (1, 2), (2, 2)]
    assert most_visited(history) == (2, 2)
    assert most_visited([(0, 0), (5, 5), (5, 5)]) == (5, 5)
    assert most_visited([]) is None
