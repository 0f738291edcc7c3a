"""gs-cgen: a source-aware userspace tracer that emits C for BCC."""
