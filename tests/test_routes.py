"""autograder/attnbook_course/routes.py: the installed functions that do a part's whole job are found, and refused."""

import csv
from pathlib import Path

import pytest

from attnbook_course import routes

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_probe_names_a_part_and_its_reference():
    for probe in routes.PROBES:
        args = probe.make()
        assert routes.same(routes.reference(probe)(*args), routes.reference(probe)(*args)), probe


def test_the_search_finds_both_assignment_solvers_in_scipy():
    """SciPy's dense solver, which someone thought of, and the sparse-graph one, which nobody had."""
    matching = tuple(p for p in routes.PROBES if p.function == "hungarian_match")
    hits = routes.search(("scipy.optimize", "scipy.sparse.csgraph"), matching)
    assert {route for _, _, route in hits} == {"scipy.optimize.linear_sum_assignment",
                                               "scipy.sparse.csgraph.min_weight_full_bipartite_matching"}


def test_the_search_finds_a_graph_librarys_matchings():
    """networkx (installed with torch): the cost matrix as a weighted bipartite graph, a matching read back."""
    matching = tuple(p for p in routes.PROBES if p.function == "hungarian_match")
    hits = routes.search(("networkx.algorithms.matching", "networkx.algorithms.bipartite.matching"), matching)
    assert {route for _, _, route in hits} == {
        "networkx.algorithms.matching.max_weight_matching", "networkx.algorithms.matching.min_weight_matching",
        "networkx.algorithms.bipartite.matching.minimum_weight_full_matching"}
    forbidden = routes._parts()["check_matching"].forbidden
    assert all(route in forbidden for _, _, route in hits)


def test_every_route_found_is_refused_by_its_part():
    """The committed search (attnbook-course routes) over every package: each route is forbidden,
    or allowed with a reason."""
    parts = routes._parts()
    with open(routes.OUT) as f:
        assert next(f).startswith("# attnbook-course routes")
        found = [(r["part"], r["route"]) for r in csv.DictReader(f)]
    assert found, "the search found nothing: not even SciPy's linear_sum_assignment?"
    missing = [(part, route) for part, route in found
               if route not in parts[part].forbidden and (part, route) not in routes.ALLOWED]
    assert not missing, f"routes that do a part's whole job but are not refused: {missing}"
