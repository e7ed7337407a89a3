from .. import Cart, cart_total
from ..tax import vat


def page():
    cart = Cart()
    cart.checkout()
    return cart_total([1]) + vat(2)
