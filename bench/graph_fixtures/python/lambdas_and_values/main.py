def double(x):
    return 2 * x


def square(x):
    return x * x


def negate(x):
    return -x


OPS = {"double": double, "square": square}
PIPELINE = [negate, double]
shout = lambda s: s.upper()


def apply(name, value):
    return OPS[name](value)


def run_all(value):
    for step in PIPELINE:
        value = step(value)
    handler = square
    handler(value)
    return shout("done")


def pick(flag):
    if flag:
        return negate
    return square


def main():
    apply("double", 3)
    run_all(1)
    fn = pick(True)
    fn(4)
    compose = lambda v: double(negate(v))
    compose(1)
