// perf event array transport and the PID-namespace helper.
trace handle {
    print "{} {}", $tid, size;
}
