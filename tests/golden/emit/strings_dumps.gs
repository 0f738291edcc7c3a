// Strings, string builtins and memory dumps.
trace handle {
    print g_name;
    print "{:s} {:x.4} {:s.*}", g_name, g_name, fd, g_name;
    if g_name == "GET" { print "get"; }
    print starts_with(g_name, "GE");
    print memcmp(g_name, hex("47 45"));
}
