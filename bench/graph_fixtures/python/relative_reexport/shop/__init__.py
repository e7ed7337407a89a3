from .cart import Cart
from .pricing import total as cart_total

__all__ = ["Cart", "cart_total"]
