"""Typed values from event bytes, and their text, JSON and metrics.

Importing the package enters the Rust and C++ std decoders into
values.LANGUAGE_DECODERS, so that whichever module of it is used first,
a std value nested in any struct is decoded by its language's printer."""
from gs_cgen.render import cpp, rust  # noqa: F401
