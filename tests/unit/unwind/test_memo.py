"""unwind/memo.py: per-address unwind rows and source frames, remembered
in memory and on disk by build-id; a changed build-id or file (size,
separate debug file) is a miss, and what is read back equals what the
module decodes."""
from __future__ import annotations

import shutil
import subprocess


from gs_cgen.indexcache import IndexCache
from gs_cgen.dwarf.cfi import CfaRule, RegisterRule, RuleKind, UnwindRow
from gs_cgen.dwarf.inline import SourceFrame
from gs_cgen.unwind.memo import ENTRY, ModuleMemo, decode_memo, encode_memo, file_stamp
from tests.prerequisites import require

ROW = UnwindRow(cfa=CfaRule(7, 16), cfa_expression=None,
                registers={16: RegisterRule(RuleKind.OFFSET, offset=-8),
                           6: RegisterRule(RuleKind.EXPRESSION, expression=b"\x76\x08")},
                return_address_register=16, signal_frame=False)
PLT_ROW = UnwindRow(cfa=None, cfa_expression=b"\x77\x08\x80\x00\x3f\x1a\x3b\x2a\x33\x24\x22",
                    registers={16: RegisterRule(RuleKind.OFFSET, offset=-8)},
                    return_address_register=16, signal_frame=True)
FRAMES = [SourceFrame("inner_step", "/src/lib.c", 22, True, 0x1234),
          SourceFrame("chain_mid", "/src/lib.c", 36, False, 0x1200)]


class CountingModule:
    """A module that answers fixed rows and frames and counts the asks."""

    def __init__(self, path: str, debug_path: str | None = None) -> None:
        self.open_path, self.debug_path = path, debug_path
        self.asked = 0

    def unwind_row_at(self, vaddr: int):
        self.asked += 1
        return {0x1160: ROW, 0x1030: PLT_ROW}.get(vaddr)

    def source_frames_at(self, vaddr: int, frame_die=None, skip_at_entry=False):
        self.asked += 1
        return FRAMES


def test_encoding_round_trips_rows_frames_and_no_fde():
    rows = {0x1160: ROW, 0x1030: PLT_ROW, 0x9999: None}
    sources = {(0x11bd, None, False): FRAMES, (0x1160, 0x1200, True): FRAMES[1:]}
    stamp = (100, "", -1)
    assert decode_memo(encode_memo(rows, sources, stamp), stamp) == (rows, sources)
    assert decode_memo(encode_memo(rows, sources, stamp), (101, "", -1)) is None
    assert decode_memo(("garbage",), stamp) is None


def test_second_session_reads_the_disk_and_asks_nothing(tmp_path):
    binary = tmp_path / "libchain.so"
    binary.write_bytes(b"x" * 100)
    cache = IndexCache(str(tmp_path / "cache" / "ab12cd34ef"))
    first = CountingModule(str(binary))
    memo = ModuleMemo(first, cache)
    assert memo.unwind_row_at(0x1160) == ROW and memo.unwind_row_at(0x1160) == ROW
    assert memo.unwind_row_at(0x5000) is None
    assert memo.source_frames_at(0x11bd) == FRAMES
    assert first.asked == 3                       # once per address, in memory
    memo.flush(force=True)
    second = CountingModule(str(binary))
    again = ModuleMemo(second, cache)
    assert again.unwind_row_at(0x1160) == ROW and again.unwind_row_at(0x5000) is None
    assert again.source_frames_at(0x11bd) == FRAMES
    assert second.asked == 0


def test_another_build_id_or_a_changed_file_is_a_miss(tmp_path):
    binary = tmp_path / "libchain.so"
    binary.write_bytes(b"x" * 100)
    cache = IndexCache(str(tmp_path / "cache" / "ab12cd34ef"))
    memo = ModuleMemo(CountingModule(str(binary)), cache)
    memo.unwind_row_at(0x1160)
    memo.flush(force=True)
    # another build-id: another directory
    other = CountingModule(str(binary))
    ModuleMemo(other, IndexCache(str(tmp_path / "cache" / "ffff0000ee"))).unwind_row_at(0x1160)
    assert other.asked == 1
    # the same build-id, the file changed (e.g. stripped): its stamp differs
    binary.write_bytes(b"x" * 60)
    changed = CountingModule(str(binary))
    ModuleMemo(changed, cache).unwind_row_at(0x1160)
    assert changed.asked == 1
    # the same build-id and file, a separate debug file found since
    debug = tmp_path / "libchain.so.debug"
    debug.write_bytes(b"d" * 10)
    with_debug = CountingModule(str(binary), str(debug))
    assert file_stamp(with_debug) != file_stamp(changed)
    ModuleMemo(with_debug, cache).source_frames_at(0x11bd)
    assert with_debug.asked == 1


def test_flush_merges_what_another_process_stored(tmp_path):
    binary = tmp_path / "m"
    binary.write_bytes(b"x")
    cache = IndexCache(str(tmp_path / "cache" / "ab12cd34ef"))
    one, two = ModuleMemo(CountingModule(str(binary)), cache), \
        ModuleMemo(CountingModule(str(binary)), cache)
    one.unwind_row_at(0x1160)
    two.unwind_row_at(0x1030)
    one.flush(force=True)
    two.flush(force=True)
    rows, _ = decode_memo(cache.load(ENTRY), file_stamp(CountingModule(str(binary))))
    assert rows == {0x1160: ROW, 0x1030: PLT_ROW}


def test_a_real_module_reads_back_what_it_decodes(tmp_path, monkeypatch):
    """libc's rows and frames at a few PCs, decoded, stored, read back."""
    require(None if shutil.which("gcc") else "needs gcc")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    from gs_cgen.dwarf import open_module
    libc_path = subprocess.run(["gcc", "-print-file-name=libc.so.6"], capture_output=True,
                               text=True).stdout.strip()
    module = open_module(libc_path)
    cache = module.derived_cache()
    require("this libc is too small to be cached" if cache is None else None)
    symbol = module.find_functions("qsort")[0].low_pc
    memo = ModuleMemo(module, cache)
    decoded = memo.unwind_row_at(symbol), memo.source_frames_at(symbol)
    memo.flush(force=True)
    again = ModuleMemo(module, cache)
    assert (again.unwind_row_at(symbol), again.source_frames_at(symbol)) == decoded
    assert again._new == 0
