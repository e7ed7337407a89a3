def outer(values):
    def clean(v):
        return v.strip()

    def inner():
        return [clean(v) for v in values]

    return inner()


def counter():
    count = 0

    def step():
        nonlocal count
        count += 1
        return count

    return step


outer([" a "])
next_value = counter()
next_value()
