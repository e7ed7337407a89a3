import app.tools
import app.tools as t
from app.tools import parse as p, render


def run(text):
    words = p(text)
    app.tools.render(words)
    return t.parse(render(words))
