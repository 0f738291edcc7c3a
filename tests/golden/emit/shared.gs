// Sites whose code is the same share one function (plan.shared_programs),
// which reads its probe id from the attach cookie; a block whose code is
// its own keeps a constant id, and a return probe is never shared.
trace handle {
    print "fd={}", fd;
}

trace server.c:42 {
    print "fd={}", fd;
}

trace handle {
    print "size={}", size;
}

trace handle:return {
    print $retval;
}
