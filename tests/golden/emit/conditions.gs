// if / else if / else with soft abort, short-circuit, arithmetic, let.
trace handle {
    let limit = fd * 2 + 1;
    if fd > 3 && size / fd != 0 {
        print "big {}", limit;
    } else if g_count == -1 || !(size < 0) {
        print "chain";
    } else {
        print "small";
    }
    print (size >> 2) % 7;
}
