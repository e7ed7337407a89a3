from shapes import Cube, Square


def report():
    s = Square(2)
    s.describe()
    c = Cube(3)
    c.volume()
    return c.name()
