"""Which uprobes share a BPF link (runtime/session.py _link_batches): the
sites of one program and path whose address no other attachment has."""
from __future__ import annotations

from types import SimpleNamespace

from gs_cgen.plan.model import ProbeSite
from gs_cgen.runtime.session import _link_batches


def site(probe_id: int, offset: int, path: str = "/app", at_return: bool = False) -> ProbeSite:
    return ProbeSite(probe_id, f"p{probe_id}", path, offset, offset, None, None, None,
                     at_return=at_return)


SHARED, OWN = SimpleNamespace(fd=7), SimpleNamespace(fd=8)


def test_one_link_per_program_and_path():
    order = [(site(0, 0x10), SHARED, ""), (site(1, 0x20), SHARED, ""),
             (site(2, 0x30), OWN, ""), (site(3, 0x40, "/lib.so"), SHARED, "")]
    batches, alone = _link_batches(order)
    assert [[s.probe_id for s in batch] for batch in batches] == [[0, 1], [2], [3]]
    assert alone == []


def test_a_shared_address_and_return_probes_attach_alone_in_order():
    """Handlers of one address run in attach order (blocks in script
    order), and a return probe's entry record must come first."""
    entry, ret = site(4, 0x50), site(4, 0x50, at_return=True)
    order = [(site(0, 0x10), SHARED, ""), (site(1, 0x10), SHARED, ""),
             (site(2, 0x20), SHARED, ""), (entry, OWN, "e"), (ret, OWN, "")]
    batches, alone = _link_batches(order)
    assert [[s.probe_id for s in batch] for batch in batches] == [[2]]
    assert [(s.probe_id, suffix) for s, _, suffix in alone] == [(0, ""), (1, ""), (4, "e"),
                                                               (4, "")]
