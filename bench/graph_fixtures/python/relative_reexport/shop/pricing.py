from . import tax


def total(items):
    return sum(items) + tax.vat(sum(items))
