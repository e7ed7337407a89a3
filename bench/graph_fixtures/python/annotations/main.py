from __future__ import annotations

from typing import Optional

from services import Mailer, Store


def notify(mailer: Mailer, store: Optional[Store] = None) -> None:
    mailer.send("ops")
    if store is not None:
        store.save("x")


def make_store() -> Store:
    return Store()


def main(m: "Mailer"):
    make_store().save(1)
    notify(m)
