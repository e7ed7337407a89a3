def numbers(limit):
    n = 0
    while n < limit:
        yield n
        n += 1


def evens(limit):
    for n in numbers(limit):
        if is_even(n):
            yield n


def is_even(n):
    return n % 2 == 0


total = sum(evens(10))
first = next(numbers(3))
