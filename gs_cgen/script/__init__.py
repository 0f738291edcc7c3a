"""The trace script: grammar, AST, parser and static checks.

`parse(text)` builds the AST (syntax errors become ScriptError);
`check(script)` enforces `let` scoping and print-argument rules.
lark is imported only inside this package.
"""
from gs_cgen.script.check import check
from gs_cgen.script.format import decode_string, parse_format
from gs_cgen.script.parser import parse

__all__ = ["check", "decode_string", "parse", "parse_format"]
