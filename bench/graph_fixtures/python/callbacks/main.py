def on_done(result):
    return result


def on_error(exc):
    return str(exc)


def run_task(task, callback, errback=None):
    try:
        return callback(task())
    except Exception as exc:
        if errback:
            errback(exc)


def fetch():
    return 42


class Button:
    def __init__(self, handler):
        self.handler = handler

    def click(self):
        return self.handler("clicked")


run_task(fetch, on_done, errback=on_error)
Button(on_done).click()
