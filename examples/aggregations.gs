trace record {
    count calls by req->name;
    sum bytes = size by req->status;
    hist sizes = size;
}
trace spread { count spread; }
