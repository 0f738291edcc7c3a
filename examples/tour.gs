// Language tour: trace examples/build/shop (docs/guide.md, "A tour of the language").
trace handle_order {
    print *o;                                   // a whole struct, through a pointer
    print customer;                             // char*  -> quoted string
    print o.item.price;                         // member chain, double
    print o.qty_history;                        // array
    print "order {} x{}: tag={:x} gift={} o={:p}", o.id, qty, o.tag.raw, o.gift, o;
    print "sku {:x.8} / {:s.8}", o.item.sku, o.item.sku;   // memory dumps
    bt;
}

trace shop.c:46 {                               // after status was set
    let cents = total_cents;
    print o.status;                             // enum
    if o.ship_to.zip > 1000 {                   // ship_to is NULL on even orders
        print "ship {} cents to {}", cents, o.ship_to.city;
    } else if cents > 5000 {
        print "big pick-up: {} cents", cents;
    } else {
        print "small pick-up: {} cents", cents;
    }
    if customer == "alice" {
        print "alice again, orders_handled={}", orders_handled;
    }
    if starts_with(o.item.sku, "B-") && strncmp(customer, "bob", 3) {
        print "bob bought a B item";
    }
    if memcmp(o.item.sku, hex("43 2d"), 2) {    // "C-"
        print "a C item";
    }
    print "pid={} tid={} ts={}", $pid, $tid, $timestamp;
}
