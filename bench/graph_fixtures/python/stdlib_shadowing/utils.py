def join(parts):
    return "/".join(parts)


def loads(text):
    return text


class Path:
    def exists(self):
        return True
