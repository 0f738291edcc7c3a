// count / sum / hist kept in maps: scalar, enum and C string keys; an
// aggregation inside an if; a block with a print beside its updates.
trace handle {
    count calls;
    sum bytes = size by g_color;
    hist sizes = size by req->path, fd;
    if fd > 2 {
        count big by g_name;
    }
}
trace server.c:42 {
    count calls;
    print fd;
}
