// Two trace points in examples/demo.c
trace add {
    print "add a={} b={} requests={}", a, b, request_count;
}

trace demo.c:22 {
    print cost;
    print "total_bytes={} pid={}", total_bytes, $pid;
}
