// Thread-local globals: the thread pointer from task_struct.thread.fsbase,
// the module's block from proc_module_tls, a pointer read out of TLS.
trace handle {
    print "requests={} last={}", t_requests, t_last;
    if t_last.id > 3 {
        print t_last.path;
    }
}
