def helper():
    return 1


def work():
    helper()
    return compute(2)


def compute(n):
    return n * helper()


work()
