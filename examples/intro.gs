trace handle_order {                        // a function: its parameters
    print "order {} for {}: {} x {}", o.id, customer, qty, o.item.sku;
    if o.id == 2 { bt; }                    // the call stack, as gdb's bt
}
trace shop.c:46 { print o.status; }         // a line: locals after it ran
trace handle_order:return {                 // a return: value and latency
    print "{} cents in {} ns", $retval, $duration;
    count orders by $entry(customer);       // an aggregation, in the kernel
}
