// Member access through a pointer, bitfields, indexing, address-of, bt.
trace handle {
    print *req;
    print req.flags;
    print req.path[fd];
    print "{:p}", &req.path;
    bt;
}
