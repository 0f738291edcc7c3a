/* A toy order service for the language tour (docs/guide.md) and README's tour.
 * Build: gcc -g -O0 -fPIE -pie -o examples/build/shop examples/shop.c
 * It handles one order every 100 ms, forever, and prints nothing. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum status { PENDING, PAID, SHIPPED, CANCELLED };

struct item {
    char sku[8];                /* fixed-size char array: "A-100" */
    double price;               /* floating point */
};

struct address {
    const char *city;           /* char pointer */
    int zip;
};

struct order {
    int id;
    struct item item;           /* nested struct */
    enum status status;
    unsigned int gift : 1;      /* bitfields */
    unsigned int priority : 3;
    union {                     /* the same 4 bytes seen two ways */
        unsigned int raw;
        unsigned char bytes[4];
    } tag;
    int qty_history[4];         /* array */
    struct address *ship_to;    /* NULL for pick-up orders */
    struct order *next;         /* linked list of recent orders */
};

long orders_handled = 0;        /* global counter */

static struct address home = { "Lisbon", 1100 };
static const char *customers[] = { "alice", "bob", "carol" };
static const char *skus[] = { "A-100", "B-220", "C-3" };

int handle_order(struct order *o, const char *customer, int qty)
{
    int total_cents = (int)(o->item.price * 100) * qty;
    orders_handled++;
    o->status = (total_cents > 5000) ? PAID : PENDING;
    return total_cents;
}

int main(void)
{
    struct order orders[3];     /* a ring of three orders, reused */
    memset(orders, 0, sizeof orders);

    for (int n = 1;; n++) {
        struct order *o = &orders[n % 3];
        struct order *prev = &orders[(n + 2) % 3];
        int qty = n % 5 + 1;

        o->id = n;
        strcpy(o->item.sku, skus[n % 3]);
        o->item.price = 9.5 + (n % 3) * 10;
        o->status = PENDING;
        o->gift = (n % 4 == 0);
        o->priority = n % 8;
        o->tag.raw = 0xC0FFEE00u + n;
        memmove(o->qty_history + 1, o->qty_history, 3 * sizeof(int));
        o->qty_history[0] = qty;
        o->ship_to = (n % 2) ? &home : NULL;   /* every other order: pick-up */
        o->next = (n > 1) ? prev : NULL;

        handle_order(o, customers[n % 3], qty);
        usleep(100 * 1000);
    }
    return 0;
}
