"""The gdb side of the fidelity harness; runs inside gdb's own Python:

    gdb -batch -nx -ex "set language c" -ex 'set $fidelity_request = "REQUEST.json"' \
        -ex "set language auto" -x gdb_script.py --args PROG

REQUEST.json: {"result": PATH, "entry": vaddr of PROG's entry point,
"string_cap": N, "language": "c"|"rust"|"cpp", "sites": [{"id", "module", "address", "function", "globals"}]},
where `address` is a module virtual address, `module` the module's real
path and `function` null, or the name whose `break FUNC` location this is.

The program is started held before its first instruction (`starti`), run to
its entry point (every library it links is mapped by then), and given its
breakpoints. The first hit of each site records the innermost frame's
parameters and locals (walking gdb.Frame.block() up to the function's
block; the innermost block that declares a name wins) and the site's
globals; that location is then disabled. So a site's record is its first
hit: the same iteration as gs-cgen's first event there.

Values are written as small typed JSON trees ("raw" values; compare.py
turns them into the canonical form):
  {"k": "int", "v": N}          integers (__int128 too) and chars
  {"k": "bool", "v": B}
  {"k": "float", "bits": HEX, "size": 2|4|8}    the IEEE bits
  {"k": "ldouble", "bits": HEX}                  x87 80-bit extended, its 80 bits
  {"k": "enum", "v": N, "name": first enumerator with that value or null}
  {"k": "ptr", "v": N}          {"k": "synthetic", "pointee": RAW} for DW_OP_implicit_pointer;
                                a C++ reference: a variable as its referent's RAW,
                                a member as the address it holds
  {"k": "cstr", "null": true} | {"k": "cstr", "ptr": N, "hex": BYTES, "end": "nul"|"cap"}
                                | {"k": "cstr", "ptr": N, "unreadable": true}
                                a top-level char pointer: the string it points to
  {"k": "chars", "hex": BYTES}  a char array, up to its first NUL
  {"k": "struct", "fields": [[NAME, RAW], ...]}   anonymous members flattened;
                                _Complex as a struct of "real" and "imag"; a C++
                                base as its member `<Base>` (gdb's print); static
                                members and _vptr left out
  {"k": "array", "items": [RAW, ...]}
  {"k": "variant", "name": NAME, "payload": RAW}
                                a Rust enum (DW_TAG_variant_part): gdb resolves its
                                type to the active variant, a struct named
                                `ENUM::NAME` (the discriminant beside it is an
                                artificial member); the payload is that struct
  {"k": "optout"}               gdb: <optimized out> (a leaf, or a whole aggregate)
  {"k": "uninit", "shown": RAW} gdb: `[uninitialized] VALUE` (DW_OP_GNU_uninit): the
                                bits are there, gdb does not vouch for them
  {"k": "error", "msg": TEXT}   gdb could not read it
  {"k": "absent", "msg": TEXT}  not compared: a global gdb has no symbol for, a C++
                                reference into the program's code (see _reference)
  {"k": "other", "type": T, "text": TEXT}
This file imports nothing but gdb and the standard library.
"""
import json
import os
import re

import gdb

CHAR_NAMES = ("char", "signed char", "unsigned char")
MAX_ITEMS = 1024                 # array elements recorded
PAGE = 4096


def request():
    path = gdb.convenience_variable("fidelity_request").string()
    with open(path) as f:
        return json.load(f)


def module_bases(pid, paths):
    """Load bias of each module: start of its offset-0 mapping (the corpus
    and libpython are linked at 0)."""
    bases = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and int(parts[2], 16) == 0:
                path = os.path.realpath(parts[5].strip())
                if path in paths and path not in bases:
                    bases[path] = int(parts[0].split("-")[0], 16)
    return bases


# ---------------------------------------------------------------- values

def is_char(gdb_type):
    t = gdb_type.strip_typedefs()
    return t.code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_CHAR) and t.sizeof == 1 \
        and t.unqualified().name in CHAR_NAMES


def read_cstring(address, cap):
    """The bytes before the NUL at `address`, read page by page (a string
    may end just before an unmapped page)."""
    inferior = gdb.selected_inferior()
    data = b""
    while len(data) < cap:
        at = address + len(data)
        chunk = min(cap - len(data), PAGE - at % PAGE)
        try:
            part = bytes(inferior.read_memory(at, chunk))
        except gdb.MemoryError:
            return None, None
        nul = part.find(b"\0")
        if nul >= 0:
            return data + part[:nul], "nul"
        data += part
    return data, "cap"


def convert(value, top, cap):
    """A gdb.Value as a raw JSON tree (see the module docstring)."""
    try:
        return _convert(value, top, cap)
    except (gdb.error, gdb.MemoryError, RuntimeError, ValueError, OverflowError) as exc:
        return {"k": "error", "msg": str(exc)}


def _convert(value, top, cap):
    t = value.type.strip_typedefs()
    code = t.code
    if code == gdb.TYPE_CODE_STRUCT or code == gdb.TYPE_CODE_UNION:
        return _aggregate(value, t, cap)
    if code == gdb.TYPE_CODE_ARRAY:
        return _array(value, t, cap)
    if value.is_optimized_out:
        return {"k": "optout"}
    if code != gdb.TYPE_CODE_PTR and value.format_string() == "<synthetic pointer>":
        # gdb 13's `print` for a member past the last DW_OP_piece of its
        # object (clang: piece 4 of an 8-byte struct): no value, though
        # is_optimized_out says False and int() gives 0
        return {"k": "optout"}
    if code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_CHAR):
        # int() stops at 8 bytes; __int128 goes through gdb's own decimal
        # text (not /d, which would print an unsigned one as signed).
        return {"k": "int", "v": int(value) if t.sizeof <= 8 else int(value.format_string())}
    if code == gdb.TYPE_CODE_COMPLEX:
        return _complex(value, t)
    if code == gdb.TYPE_CODE_BOOL:
        return {"k": "bool", "v": int(value) != 0}
    if code == gdb.TYPE_CODE_FLT:
        # The exact bits (gdb 13's /x on a float): float() would drop a NaN's sign.
        return _part(int(value.format_string(format="x"), 16), t)
    if code == gdb.TYPE_CODE_ENUM:
        number = int(value)
        names = [f.name for f in t.fields() if f.enumval == number]
        return {"k": "enum", "v": number, "name": names[0] if names else None}
    if code == gdb.TYPE_CODE_PTR:
        return _pointer(value, t, top, cap)
    if code in _REFERENCES:
        return _reference(value, top, cap)
    return {"k": "other", "type": str(value.type), "text": value.format_string()}


def _complex(value, t):
    """_Complex: a struct of its real and imaginary parts, from their bits
    (gdb prints /x on a complex as `0xREAL + 0xIMAGi`)."""
    text = value.format_string(format="x")
    parts = re.match(r"(0x[0-9a-f]+) \+ (0x[0-9a-f]+)i", text).groups()
    part = t.target().strip_typedefs()
    return {"k": "struct", "fields": [[name, _part(int(bits, 16), part)]
                                      for name, bits in zip(("real", "imag"), parts)]}


def _part(bits, part):
    if part.code != gdb.TYPE_CODE_FLT:           # gcc's _Complex int
        width = 8 * part.sizeof
        negative = part.is_signed and bits >> (width - 1)
        return {"k": "int", "v": bits - (1 << width) if negative else bits}
    if part.sizeof in (2, 4, 8):
        return {"k": "float", "bits": f"{bits:x}", "size": part.sizeof}
    if part.name == "long double":
        return {"k": "ldouble", "bits": f"{bits & (1 << 80) - 1:x}"}     # x87: the low 10 bytes
    return {"k": "other", "type": str(part), "text": f"0x{bits:x}"}


def _pointer(value, t, top, cap):
    if "<synthetic pointer>" in value.format_string(symbols=False, address=False):
        return {"k": "synthetic", "pointee": convert(value.dereference(), False, cap)}
    address = int(value)
    if not (top and is_char(t.target())):
        return {"k": "ptr", "v": address}
    if address == 0:
        return {"k": "cstr", "null": True}
    data, end = read_cstring(address, cap)
    if data is None:
        return {"k": "cstr", "ptr": address, "unreadable": True}
    return {"k": "cstr", "ptr": address, "hex": data.hex(), "end": end}


_REFERENCES = (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF)
PIECED_REFERENCES = []       # reference members left out of the value being converted


def in_code(address, size):
    """Whether [address, address + size) overlaps an executable mapping."""
    with open(f"/proc/{gdb.selected_inferior().pid}/maps") as f:
        for line in f:
            parts = line.split()
            low, high = (int(x, 16) for x in parts[0].split("-"))
            if "x" in parts[1] and low < address + size and address < high:
                return True
    return False


def _reference(value, top, cap):
    """A C++ reference (gdb: `@0xADDR: VALUE`): a variable that is one is
    the object it refers to, as gs-cgen reads it (`x.y` through a
    reference reads the object); a member that is one (a lambda's capture
    by reference) is the address it holds."""
    referent = value.referenced_value()
    if top:
        if in_code(int(referent.address), referent.type.sizeof):
            # Garbage before the prologue stored the reference: the bytes
            # of code where gs-cgen's uprobes put an int3 on every probed
            # instruction, and gdb hides its own breakpoints' int3.
            return {"k": "absent", "msg": "a reference into the program's code, "
                    "where probes replace instructions (gdb hides its breakpoints)"}
        return convert(referent, True, cap)
    return {"k": "ptr", "v": int(referent.address)}


def rust_variant(value, t):
    """The active variant's field of a Rust enum value's type, else None.
    In memory gdb resolves an enum's type to two fields: the discriminant
    (artificial, unnamed; for a niche layout the field holding the niche)
    and the active variant, whose struct type is named after the enum:
    `ENUM::VARIANT`. A value gdb assembled from registers and constants
    (DW_OP_piece) keeps every variant: see in_memory_variant."""
    if t.name is None:
        return None
    fields = t.fields()
    named = [f for f in fields if not f.artificial]
    if not named or not all(f.type is not None and f.type.name == f"{t.name}::{f.name}"
                            for f in named):
        return None
    if len(named) == 1:
        return named[0]
    return in_memory_variant(value, t, fields)


RUST_SCRATCH_BELOW_SP = 512      # below the red zone, inside the stack's mapping


def in_memory_variant(value, t, fields):
    """gdb 13 resolves a Rust enum's variant only for a value in memory
    (`print` of one in pieces hits an internal error), so the discriminant
    gdb read is written to scratch stack memory below the red zone, with
    the enum's type there gdb names the variant, and the bytes are put
    back. The variant's members are then read from the value itself."""
    discriminant = next((f for f in fields if f.artificial), None)
    if discriminant is None:
        raise ValueError(f"{t.name}: variants without a discriminant")
    number = value[discriminant]
    if number.is_optimized_out:
        return OPTIMIZED_OUT_VARIANT
    size = discriminant.type.sizeof
    data = bytearray(t.sizeof)
    start = discriminant.bitpos // 8
    data[start:start + size] = (int(number) % (1 << 8 * size)).to_bytes(size, "little")
    inferior = gdb.selected_inferior()
    scratch = int(gdb.newest_frame().read_register("rsp")) - RUST_SCRATCH_BELOW_SP - len(data)
    saved = bytes(inferior.read_memory(scratch, len(data)))
    inferior.write_memory(scratch, bytes(data))
    try:
        resolved = gdb.Value(scratch).cast(t.pointer()).dereference()
        names = [f.name for f in resolved.type.fields() if not f.artificial]
    finally:
        inferior.write_memory(scratch, saved)
    if len(names) != 1:
        raise ValueError(f"{t.name}: gdb resolved no single variant")
    return next(f for f in fields if f.name == names[0])


OPTIMIZED_OUT_VARIANT = object()


def _aggregate(value, t, cap, virtual_seen=None):
    variant = rust_variant(value, t)
    if variant is OPTIMIZED_OUT_VARIANT:
        return {"k": "optout"}
    if t.name and t.fields() and all(f.artificial for f in t.fields()):
        # an enum whose discriminant names no variant (stack garbage before
        # the prologue stored it): gdb leaves only the discriminant member
        return {"k": "error", "msg": "no variant has this discriminant"}
    if variant is not None:
        return {"k": "variant", "name": variant.name,
                "payload": convert(value[variant], False, cap)}
    fields = []
    virtual_seen = set() if virtual_seen is None else virtual_seen
    for field in t.fields():
        if field.artificial or not hasattr(field, "bitpos"):
            # the compiler's own members (C++ _vptr.CLASS), and C++ static
            # members: no part of the object (compared as globals)
            continue
        if field.is_base_class:                  # gdb's print: `<Base> = {...}`
            if field.bitpos is None:             # a virtual base (its offset is in the vtable)
                if field.name in virtual_seen:
                    continue                     # shown once, where first met (gdb's print)
                virtual_seen.add(field.name)
            fields.append([f"<{field.name}>", _base(value, field, cap, virtual_seen)])
            continue
        if value.address is None and field.type.strip_typedefs().code in _REFERENCES:
            # A reference member of a value in pieces (a lambda's closure
            # at -O1: its capture by reference a DW_OP_implicit_pointer
            # piece): gdb 13 cannot touch it (any use of it is an internal
            # error, coerce_pieced_ref), so it is not compared.
            PIECED_REFERENCES.append(field.name)
            continue
        member = convert(value[field], False, cap)
        if not field.name:                       # anonymous struct/union: C names its members
            fields.extend(member.get("fields", []))
        else:
            fields.append([field.name, member])
    if fields and all(raw["k"] == "optout" for _, raw in fields):
        return {"k": "optout"}
    return {"k": "struct", "fields": fields}


def _base(value, field, cap, virtual_seen):
    """A C++ base class subobject. gdb reads one of a class with virtual
    bases through the vtable (to find the complete object), so before the
    constructor set the vtable pointer it fails even for a base at a fixed
    offset: that one is then read at its offset, and only a virtual base
    (whose offset the vtable holds) is an error."""
    try:
        base = value[field]
    except (gdb.error, gdb.MemoryError) as exc:
        if field.bitpos is None or value.address is None:
            return {"k": "error", "msg": str(exc)}
        base = (value.address.cast(gdb.lookup_type("char").pointer()) + field.bitpos // 8) \
            .cast(field.type.pointer()).dereference()
    try:
        t = base.type.strip_typedefs()
        if t.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
            return _aggregate(base, t, cap, virtual_seen)
        return convert(base, False, cap)
    except (gdb.error, gdb.MemoryError, RuntimeError, ValueError, OverflowError) as exc:
        return {"k": "error", "msg": str(exc)}


def _array(value, t, cap):
    low, high = t.range()
    count = max(0, min(high - low + 1, MAX_ITEMS))
    if is_char(t.target()):
        data = bytearray()
        for index in range(count):
            element = value[low + index]
            if element.is_optimized_out:
                return {"k": "optout"}
            byte = int(element) & 0xFF
            if byte == 0:
                break
            data.append(byte)
        return {"k": "chars", "hex": bytes(data).hex()}
    items = [convert(value[low + index], False, cap) for index in range(count)]
    if items and all(raw["k"] == "optout" for raw in items):
        return {"k": "optout"}
    return {"k": "array", "items": items}


# ------------------------------------------------------------- recording

def symbol_value(symbol, frame):
    return symbol.value(frame) if symbol.needs_frame else symbol.value()


def is_label(symbol):
    """gdb lists a C label whose address is gone as an optimized-out
    variable of its internal type __CORE_ADDR; it is not a variable."""
    return symbol.type is not None and symbol.type.name == "__CORE_ADDR"


def visible_variables(frame, cap):
    """Parameters and locals visible at the frame's PC, innermost block first."""
    seen, variables = set(), []
    block = frame.block()
    while block is not None:
        for symbol in block:
            if not (symbol.is_argument or symbol.is_variable) or symbol.name in seen \
                    or is_label(symbol):
                continue
            seen.add(symbol.name)
            kind = "parameter" if symbol.is_argument else "local"
            where = frame
            if frame.type() == gdb.INLINE_FRAME and entry_value_at(symbol.name, frame.pc()):
                where = real_frame(frame)
            variables.append(_variable(symbol.name, kind, str(symbol.type),
                                       lambda s=symbol, f=where: symbol_value(s, f), cap))
        if block.function is not None:
            break
        block = block.superblock
    return variables


def entry_value_at(name, pc):
    """Whether NAME's location at `pc` (gdb's `info address`, which looks
    the name up as the frame walk does) is a DW_OP_entry_value."""
    try:
        text = gdb.execute(f"info address {name}", to_string=True)
    except gdb.error:
        return False
    if "entry_value" not in text:
        return False
    # Each range starts a line, but the first may follow a `Base address
    # 0x...` on its line (gdb 13 for a DWARF 5 location list).
    ranges = [part for part in re.split(r"(?=\bRange 0x)", text) if part.startswith("Range")]
    if not ranges:
        return True
    for part in ranges:
        low, high = (int(x, 16) for x in re.match(r"Range (0x[0-9a-f]+)-(0x[0-9a-f]+)",
                                                    part).groups())
        if low <= pc < high:
            return "entry_value" in part
    return False


def real_frame(frame):
    """The frame of the function an inlined frame's code belongs to.
    gdb 13 resolves a DW_OP_entry_value in an inlined frame taking the
    inlined frame's outer frame (that same function) for the caller, so
    a DW_OP_fbreg in the call site's DW_AT_call_value is read from the
    wrong frame (libpython's format_float_short: its `type` 240 bytes off,
    into PyOS_double_to_string's own frame, whose `type@entry` gdb gets
    right). Registers, memory and frame base are the same in both frames:
    only the entry value differs, and the real frame's is the caller's."""
    while frame is not None and frame.type() == gdb.INLINE_FRAME:
        frame = frame.older()
    return frame


def global_variables(frame, names, shadowed, cap):
    found = []
    for name in names:
        if name in shadowed:
            continue                             # a local of that name wins
        symbol = gdb.lookup_symbol(name, frame.block())[0] or gdb.lookup_static_symbol(name)
        if symbol is None or symbol.addr_class == gdb.SYMBOL_LOC_OPTIMIZED_OUT:
            # Not a variable of this build: rustc -O1 leaves a static it
            # folded into its uses as a DIE without a location, which
            # gdb's `print` calls "No symbol", as gs-cgen does. Not compared.
            why = "gdb has no symbol of that name" if symbol is None else \
                "a DIE without a location (gdb's print: No symbol)"
            found.append({"name": name, "kind": "global", "type": None,
                          "raw": {"k": "absent", "msg": why}})
            continue
        found.append(_variable(name, "global", str(symbol.type),
                               lambda s=symbol: symbol_value(s, frame), cap))
    return found


def _variable(name, kind, type_text, read, cap):
    PIECED_REFERENCES.clear()
    try:
        raw = convert(read(), True, cap)
    except (gdb.error, gdb.MemoryError, RuntimeError) as exc:
        raw = {"k": "error", "msg": str(exc)}
    # `print` of a value with a reference member in pieces is gdb's
    # internal error too (see _aggregate): such a value is not asked.
    if raw["k"] not in ("optout", "error", "absent") and UNINIT_CHECK \
            and not PIECED_REFERENCES and _uninitialized(name):
        raw = {"k": "uninit", "shown": raw}
    return {"name": name, "kind": kind, "type": type_text, "raw": raw}


# DW_OP_GNU_uninit is gcc's; rustc never emits it, and gdb 13's `print`
# of a Rust enum assembled from pieces is an internal error (see
# in_memory_variant), so Rust programs are not asked (request "language").
UNINIT_CHECK = True


def _uninitialized(name):
    """DW_OP_GNU_uninit: gdb shows the bits but marks them `[uninitialized]`
    (only in `print`: gdb.Value does not say). `print NAME` looks the name
    up as the frame walk did, innermost block first."""
    try:
        return "[uninitialized]" in gdb.execute(f"print {name}", to_string=True)[:80]
    except gdb.error:
        return False


def record_hit(site, cap):
    frame = gdb.newest_frame()
    pc = frame.pc()
    entry = {"id": site["id"], "pc": pc, "sp": int(frame.read_register("rsp")),
             "function": frame.name()}
    try:
        entry["variables"] = visible_variables(frame, cap)
        shadowed = {v["name"] for v in entry["variables"]}
        entry["variables"] += global_variables(frame, site.get("globals", []), shadowed, cap)
    except RuntimeError as exc:
        entry["error"] = str(exc)
    return entry


def run_to_exit(inferior, by_address, hits, cap):
    """Continue until the program exits; at each stop on one of ours,
    record the hit and disable that location (its first hit is the one)."""
    while True:
        stop = gdb.execute("continue", to_string=True)
        if not inferior.threads():
            return stop
        pc = gdb.newest_frame().pc()
        if pc not in by_address:
            # A signal the program did not expect: say so, do not hang.
            gdb.execute("kill", to_string=True)
            return stop
        site, location = by_address.pop(pc)
        if site is not None:
            hits.append(record_hit(site, cap))
        location.enabled = False


def set_breakpoints(sites, bases):
    """address -> (site, breakpoint location). A site names its function
    (`break FUNC`: gdb decides the locations) or only its address
    (`break *ADDR`). Both are user breakpoints, not internal ones: at an
    inlined call's first PC gdb then presents the frame a user would see."""
    wanted, specs = {}, {}
    for site in sites:
        base = bases.get(site["module"])
        if base is None:
            continue
        wanted[base + site["address"]] = site
        spec = site["function"] or f"*0x{base + site['address']:x}"
        specs.setdefault(spec, None)
    by_address = {}
    for spec in specs:
        for location in gdb.Breakpoint(spec).locations:
            # A location no site asked for is disabled at its first hit.
            by_address[location.address] = (wanted.get(location.address), location)
    return by_address


def main():
    global UNINIT_CHECK
    req = request()
    UNINIT_CHECK = req.get("language", "c") != "rust"
    for command in ("set pagination off", "set confirm off", "set startup-with-shell off",
                    "set disable-randomization on", "unset environment LINES",
                    "unset environment COLUMNS", "set breakpoint pending off"):
        gdb.execute(command)
    gdb.execute("starti", to_string=True)
    inferior = gdb.selected_inferior()
    program = os.path.realpath(gdb.current_progspace().filename)
    exe_base = module_bases(inferior.pid, {program})[program]
    gdb.execute(f"tbreak *0x{exe_base + req['entry']:x}", to_string=True)
    gdb.execute("continue", to_string=True)
    bases = module_bases(inferior.pid, {site["module"] for site in req["sites"]})
    by_address = set_breakpoints(req["sites"], bases)
    hits = []
    stop = run_to_exit(inferior, by_address, hits, req["string_cap"])
    code = gdb.convenience_variable("_exitcode")
    result = {"hits": hits, "bases": bases,
              "unmapped": [s["id"] for s in req["sites"] if s["module"] not in bases],
              "exit_code": None if code is None else int(code),
              "last_stop": re.sub(r"\s+", " ", stop).strip()}
    with open(req["result"], "w") as f:
        json.dump(result, f)


if gdb.convenience_variable("fidelity_library") is None:    # tests load the functions only
    main()
