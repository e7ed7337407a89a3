import functools


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


def retry(times):
    def decorate(fn):
        def wrapper(*args):
            for _ in range(times):
                fn(*args)

        return wrapper

    return decorate


@logged
def save(item):
    return item


@retry(3)
def send(item):
    return save(item)


send(1)
