// Return probes: $retval in rax, $duration, and $entry values that the
// capture probe reads after the prologue (handle's probe address is past
// its first instruction), one of them in a condition.
trace handle:return {
    print $retval;
    print "took {} ns", $duration;
    print $entry(req->id);
    if $entry(fd) > 2 {
        print "fd {} -> {}", $entry(fd), $retval;
    }
}
