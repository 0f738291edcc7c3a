// Registers, frame slots, globals, optimized-out values, specials.
trace handle {
    print "fd={} size={:x} count={}", fd, size, g_count;
    print ok;
    print $pid;
}

trace server.c:42 {
    print g_color;
    print "t={} in={}", $timestamp, $input_pid;
}
