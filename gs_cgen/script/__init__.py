"""The trace script: grammar, AST, parser and static checks.

`parse(text)` builds the AST (syntax errors become ScriptError);
`check(script)` enforces `let` scoping and print-argument rules.
lark is imported only inside this package.
"""
from gs_cgen.script.check import check
from gs_cgen.script.format import decode_string, parse_format

__all__ = ["check", "decode_string", "parse", "parse_format"]


def __getattr__(name: str):
    # `parse` loads lark and the parser tables (~40 ms) on first use (PEP
    # 562): the planner and `gs-cgen info` import gs_cgen.script.ast alone.
    if name == "parse":
        from gs_cgen.script.parser import parse  # noqa: PLC0415
        return parse
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
